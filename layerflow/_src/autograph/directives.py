"""`set_loop_options` and `Feature` (`tf.autograph.experimental`)."""

from __future__ import annotations

import enum
from typing import Any

UNSPECIFIED = object()


def set_loop_options(parallel_iterations: Any = UNSPECIFIED, swap_memory: Any = UNSPECIFIED,
                     maximum_iterations: Any = UNSPECIFIED,
                     shape_invariants: Any = UNSPECIFIED) -> None:  # fmt: skip
    """Options for the TF loop around this call (`tf.autograph.experimental.set_loop_options`).

    AutoGraph lifts the call out of the loop body and hands its arguments to `tf.while_loop`
    (`shape_invariants` as a list of `(variable, shape)` pairs); called directly it does
    nothing, as in TF.
    """
    del parallel_iterations, swap_memory, maximum_iterations, shape_invariants


class Feature(enum.Enum):
    """Optional conversion features (`tf.autograph.experimental.Feature`)."""

    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"
