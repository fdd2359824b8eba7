"""Classify what the Datastream and Monitoring clients raise as retryable or permanent SourceErrors.

A refusal keeps Datastream's own message (FAILED_PRECONDITION: "Stream ... can't be paused
because it hasn't been started.") so pages and the API can show it as it is. The original
exception is the ``__cause__`` of the one raised.
"""

from __future__ import annotations

import grpc
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions

from partitions.sources.base import PermanentSourceError, RetryableSourceError, SourceError

# Transient by nature: the same call may succeed later. INTERNAL is not here: Datastream
# answers INTERNAL for invalid configurations too, and a retry loop would hide them.
RETRYABLE_CODES = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED"})
_HTTP_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    412: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def classify(exc: BaseException) -> SourceError:
    """Return the retryable or permanent SourceError for an exception of a client or transport."""
    if isinstance(exc, SourceError):
        return exc
    if isinstance(exc, api_exceptions.RetryError) and exc.cause is not None:
        return classify(exc.cause)  # the client gave up retrying: judge the last failure
    if isinstance(exc, auth_exceptions.DefaultCredentialsError):
        return PermanentSourceError(
            f"no Google credentials for the Datastream API: {exc}", code="UNAUTHENTICATED"
        )
    code, message = status_name(exc), _message(exc)
    if code in RETRYABLE_CODES:
        return RetryableSourceError(message, code=code)
    return PermanentSourceError(message, code=code)


def status_name(exc: BaseException) -> str:
    """Return the gRPC status name of an exception (UNKNOWN when it carries none)."""
    if isinstance(exc, api_exceptions.GoogleAPICallError):
        if exc.grpc_status_code is not None:
            return exc.grpc_status_code.name
        return _HTTP_STATUS.get(exc.code, "UNKNOWN")
    if isinstance(exc, grpc.RpcError) and callable(getattr(exc, "code", None)):
        status = exc.code()
        return status.name if isinstance(status, grpc.StatusCode) else "UNKNOWN"
    if isinstance(exc, ConnectionError | TimeoutError):
        return "UNAVAILABLE"  # a broken socket below the client is the transport's fault
    return "UNKNOWN"


def _message(exc: BaseException) -> str:
    """Return the message the server gave, or the exception's own text."""
    if isinstance(exc, api_exceptions.GoogleAPICallError):
        return exc.message or str(exc)
    if isinstance(exc, grpc.RpcError) and callable(getattr(exc, "details", None)):
        return exc.details() or str(exc)
    return str(exc) or type(exc).__name__
