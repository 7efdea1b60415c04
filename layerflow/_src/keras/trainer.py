"""Training loops for `Model`: compile, fit, evaluate, predict (filled in by the training work).

`Model` inherits from `Trainer`, so this file owns everything about training and the engine
owns everything about structure.
"""


class Trainer:
    """Mixin of `tf.keras.Model` providing compile/fit/evaluate/predict."""
