"""TensorFlow's error classes (`tf.errors`), raised for failures a user can cause."""

from __future__ import annotations

from typing import Any

# TF's canonical error codes (`tf.errors.OK` ... `tf.errors.UNAUTHENTICATED`); `OpError.error_code`.
OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """The base of TF's runtime errors: `message`, `op` and `node_def` as in TF."""

    def __init__(self, node_def: Any = None, op: Any = None, message: str = "", *args: Any):
        if op is None and not message and isinstance(node_def, str):
            node_def, message = None, node_def
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message

    # The canonical code of the error class (`UNKNOWN` for the base class, as TF's default).
    error_code = UNKNOWN

    def __str__(self) -> str:
        return self.message


class CancelledError(OpError):
    error_code = CANCELLED


class UnknownError(OpError):
    error_code = UNKNOWN


class InvalidArgumentError(OpError):
    error_code = INVALID_ARGUMENT


class DeadlineExceededError(OpError):
    error_code = DEADLINE_EXCEEDED


class NotFoundError(OpError):
    error_code = NOT_FOUND


class AlreadyExistsError(OpError):
    error_code = ALREADY_EXISTS


class PermissionDeniedError(OpError):
    error_code = PERMISSION_DENIED


class UnauthenticatedError(OpError):
    error_code = UNAUTHENTICATED


class ResourceExhaustedError(OpError):
    error_code = RESOURCE_EXHAUSTED


class OutOfMemoryError(ResourceExhaustedError, MemoryError):
    """An allocation failed: TF's `ResourceExhaustedError`, and a `MemoryError` for Python code
    that catches that. The message names the op and the shape it tried to allocate."""


class FailedPreconditionError(OpError):
    error_code = FAILED_PRECONDITION


class AbortedError(OpError):
    error_code = ABORTED


class OutOfRangeError(OpError):
    error_code = OUT_OF_RANGE


class UnimplementedError(OpError):
    error_code = UNIMPLEMENTED


class InternalError(OpError):
    error_code = INTERNAL


class UnavailableError(OpError):
    error_code = UNAVAILABLE


class DataLossError(OpError):
    error_code = DATA_LOSS


class OperatorNotAllowedInGraphError(TypeError):
    """TF's error for using a symbolic tensor where Python needs a value (`if t:`, `bool(t)`,
    iterating over it) inside a traced `tf.function` without AutoGraph."""
