"""`tf.random`: random tensors with TF's seeding rules."""

from layerflow import _lazy_facade as _lazy
from layerflow._src.ops.random_ops import (
    categorical,
    normal,
    set_seed,
    shuffle,
    truncated_normal,
    uniform,
)
from layerflow._src.ops.stateless_random_ops import (
    fold_in,
    gamma,
    poisson,
    split,
    stateless_binomial,
    stateless_categorical,
    stateless_gamma,
    stateless_normal,
    stateless_poisson,
    stateless_truncated_normal,
    stateless_uniform,
)

# isort: split
# --- candidate samplers (h-tfnn): in _LAZY_NAMES (imported on first use) ---


def _experimental(name: str):  # noqa: ANN202 - the submodule
    if name != "experimental":
        raise AttributeError(f"module 'layerflow.random' has no attribute {name!r}")
    import importlib

    module = importlib.import_module("layerflow.random.experimental")
    globals()[name] = module
    return module


# Imported on first use, to keep `import layerflow` fast (the op-name registry resolves them
# at its first lookup: autodiff/dispatch.py), as is `experimental`.
_LAZY_NAMES = {
    **dict.fromkeys(
        ["Algorithm", "Generator", "create_rng_state", "get_global_generator",
         "set_global_generator"],
        "layerflow._src.ops.random_generator",
    ),
    **dict.fromkeys(
        ["all_candidate_sampler", "fixed_unigram_candidate_sampler",
         "learned_unigram_candidate_sampler", "log_uniform_candidate_sampler",
         "uniform_candidate_sampler"],
        "layerflow._src.ops.candidate_sampling_ops",
    ),
    "stateless_parameterized_truncated_normal": "layerflow._src.ops.stateless_truncated_ops",
}  # fmt: skip
__getattr__ = _lazy.lazy_getattr("layerflow.random", _LAZY_NAMES, globals(), _experimental)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES) | {"experimental"})
