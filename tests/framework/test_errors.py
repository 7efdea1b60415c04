"""`tf.errors`: the canonical codes and each class's `error_code`, as TF numbers them."""

import pytest

import layerflow as tf

# TF's error_codes.proto numbering.
CODES = {
    "OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12,
    "INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16,
}  # fmt: skip

CLASSES = {
    "CancelledError": "CANCELLED", "UnknownError": "UNKNOWN",
    "InvalidArgumentError": "INVALID_ARGUMENT", "DeadlineExceededError": "DEADLINE_EXCEEDED",
    "NotFoundError": "NOT_FOUND", "AlreadyExistsError": "ALREADY_EXISTS",
    "PermissionDeniedError": "PERMISSION_DENIED", "UnauthenticatedError": "UNAUTHENTICATED",
    "ResourceExhaustedError": "RESOURCE_EXHAUSTED",
    "FailedPreconditionError": "FAILED_PRECONDITION",
    "AbortedError": "ABORTED", "OutOfRangeError": "OUT_OF_RANGE",
    "UnimplementedError": "UNIMPLEMENTED", "InternalError": "INTERNAL",
    "UnavailableError": "UNAVAILABLE", "DataLossError": "DATA_LOSS",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CODES))
def test_code_constants(name):
    assert getattr(tf.errors, name) == CODES[name]


@pytest.mark.parametrize("cls", sorted(CLASSES))
def test_error_code_of_each_class(cls):
    err = getattr(tf.errors, cls)(None, None, "boom")
    assert err.error_code == CODES[CLASSES[cls]]
    assert isinstance(err, tf.errors.OpError) and str(err) == "boom"


def test_out_of_memory_is_resource_exhausted_error():
    from layerflow._src.framework.errors import OutOfMemoryError

    err = OutOfMemoryError(None, None, "x")
    assert err.error_code == tf.errors.RESOURCE_EXHAUSTED
    assert isinstance(err, tf.errors.ResourceExhaustedError) and isinstance(err, MemoryError)


def test_operator_not_allowed_is_a_type_error():
    assert issubclass(tf.errors.OperatorNotAllowedInGraphError, TypeError)
    assert not issubclass(tf.errors.OperatorNotAllowedInGraphError, tf.errors.OpError)
