"""Small hand-made trackables that follow the engine's contract (tests don't need the engine)."""

import numpy as np

from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable


class _AfterBuild:
    """Trackable's restore protocol as a test double implements it (nothing shared with Layer)."""

    def _restore_on_create(self, source):
        self._sources.insert(0, source)

    def _call_after_build(self, fn):
        self._callbacks.append(fn)
        return True

    def _run_callbacks(self):
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb()


class FakeLayer(_AfterBuild, Trackable):
    """Creates `kernel`/`bias` on first call; restores through the protocol like Layer."""

    def __init__(self, units, seed=0, dtype=np.float32):
        self.units, self.seed, self.dtype = units, seed, dtype
        self.built = False
        self._vars = {}
        self._sources, self._callbacks = [], []

    def add_weight(self, name, shape):
        value = None
        for source in self._sources:
            taken = source.take(name)
            value = taken if value is None else value
        if value is None:
            value = np.random.default_rng(self.seed).normal(size=shape).astype(self.dtype)
        self._vars[name] = Variable(value, name=name)
        return self._vars[name]

    def build(self, n_in):
        self.add_weight("kernel", (n_in, self.units))
        self.add_weight("bias", (self.units,))
        self.built = True

    def _trackable_children(self):
        return dict(self._vars)

    def __call__(self, x):
        x = np.asarray(x)
        outermost = not self.built
        if not self.built:
            self.build(x.shape[-1])
        y = x @ np.asarray(self._vars["kernel"]) + np.asarray(self._vars["bias"])
        if outermost:
            self._run_callbacks()
        return y


class FakeModel(_AfterBuild, Trackable):
    """A model with named sublayers and a list of layers (built on first call)."""

    def __init__(self, sizes=(4, 3), seed=0):
        self.hidden = FakeLayer(sizes[0], seed)
        self.layers = [FakeLayer(n, seed + i + 1) for i, n in enumerate(sizes[1:])]
        self.built = False
        self._sources, self._callbacks = [], []

    def _trackable_children(self):
        return {"hidden": self.hidden, "layers": self.layers}

    def __call__(self, x):
        outermost = not self.built
        y = self.hidden(x)
        for layer in self.layers:
            y = layer(y)
        self.built = True
        if outermost:
            self._run_callbacks()
        return y
