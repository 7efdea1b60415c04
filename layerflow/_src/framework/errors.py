"""TensorFlow's error classes (`tf.errors`), raised for failures a user can cause."""

from __future__ import annotations

from typing import Any


class OpError(Exception):
    """The base of TF's runtime errors: `message`, `op` and `node_def` as in TF."""

    def __init__(self, node_def: Any = None, op: Any = None, message: str = "", *args: Any):
        if op is None and not message and isinstance(node_def, str):
            node_def, message = None, node_def
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message

    def __str__(self) -> str:
        return self.message


class CancelledError(OpError): ...


class UnknownError(OpError): ...


class InvalidArgumentError(OpError): ...


class DeadlineExceededError(OpError): ...


class NotFoundError(OpError): ...


class AlreadyExistsError(OpError): ...


class PermissionDeniedError(OpError): ...


class UnauthenticatedError(OpError): ...


class ResourceExhaustedError(OpError): ...


class OutOfMemoryError(ResourceExhaustedError, MemoryError):
    """An allocation failed: TF's `ResourceExhaustedError`, and a `MemoryError` for Python code
    that catches that. The message names the op and the shape it tried to allocate."""


class FailedPreconditionError(OpError): ...


class AbortedError(OpError): ...


class OutOfRangeError(OpError): ...


class UnimplementedError(OpError): ...


class InternalError(OpError): ...


class UnavailableError(OpError): ...


class DataLossError(OpError): ...
