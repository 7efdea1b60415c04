"""Hostile-file helpers: the dangerous callables a file might name, and `.keras` files built on
the fly (never committed: a binary model in the repository could be mistaken for a real one)."""

import builtins
import json
import os
import subprocess
import zipfile

import numpy.lib.format

try:  # imported now: its first import runs a subprocess (platform), which the sentinels forbid
    import h5py  # noqa: F401
except ImportError:
    pass
try:
    import posix
except ImportError:  # not on POSIX systems
    posix = None

# (module object, attribute, the name a file would use): callables a hostile file would name.
# (`builtins.exec` is left out: the import system calls it, so it cannot be a sentinel.)
DANGEROUS = [
    (os, "_exit", "os"),
    (os, "system", "os"),
    (subprocess, "Popen", "subprocess"),
    (builtins, "eval", "builtins"),
    (numpy.lib.format, "open_memmap", "numpy.lib.format"),
]
if posix is not None:
    DANGEROUS.append((posix, "system", "posix"))

# (module, name) pairs as they appear in configs, used by the tests' parametrizations.
HOSTILE = [(module_name, attr) for _, attr, module_name in DANGEROUS]


def install_sentinels(monkeypatch):
    """Replace every dangerous callable by a recorder returning its first argument, so that model
    building goes on and a hole shows as a recorded call rather than as an incidental error.
    Returns the list of recorded `(qualified name, args)` calls.
    """
    calls = []

    def make(qualname, real):
        def record(*args, **kwargs):
            if qualname == "builtins.eval" and args and isinstance(args[0], str):
                # The standard library evals source text (collections.namedtuple); a config
                # can only make the loader call eval on a tensor, never on a string.
                return real(*args, **kwargs)
            calls.append((qualname, args))
            return args[0] if args else None

        record.__name__ = qualname.rsplit(".", 1)[-1]
        return record

    for module, attr, module_name in DANGEROUS:
        monkeypatch.setattr(module, attr, make(f"{module_name}.{attr}", getattr(module, attr)))
    return calls


def write_keras(path, config, weights=b"", weights_name="model.weights.safetensors"):
    """A `.keras` zip holding `config` (a dict, or raw JSON text) and a weights member."""
    text = config if isinstance(config, str) else json.dumps(config)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps({"keras_version": "3"}))
        zf.writestr("config.json", text)
        zf.writestr(weights_name, weights)
    return path


def sequential(*layers, input_shape=(2,)):
    """A Keras 3 `config.json` document for a Sequential model of `layers` (config entries)."""
    entries = [
        {
            "module": "keras.layers",
            "class_name": "InputLayer",
            "config": {"batch_input_shape": [None, *input_shape], "dtype": "float32", "name": "in"},
            "registered_name": None,
        }
    ]
    entries.extend(layers)
    return {
        "module": "keras",
        "class_name": "Sequential",
        "config": {"name": "sequential", "trainable": True, "layers": entries},
        "registered_name": None,
    }


def layer(class_name, config, module="keras.layers", registered_name=None):
    return {
        "module": module,
        "class_name": class_name,
        "config": config,
        "registered_name": registered_name,
    }
