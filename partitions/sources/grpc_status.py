"""What a Google client or its gRPC transport raised, as a status name and a message.

Pure (no Django): each source's reader (spanner_change_stream/reader.py,
partitions/sources/bigtable/errors.py, partitions/sources/datastream/errors.py) classifies
its failures from these, adding only what is its own (Spanner's retryable INTERNAL
hints, Bigtable's explanations, Datastream's missing credentials).
"""

from __future__ import annotations

import grpc
from google.api_core import exceptions as api_exceptions

# Transient by nature: the same call may succeed later. CANCELLED among them: cdcweb ends
# its own calls by closing them, which raises nothing, so a CANCELLED it sees was not its
# own: a call that reached a gRPC server as it began to shut down is cancelled, not broken
# UNAVAILABLE (tests/partitions/simulator/core/test_grpc_simulator.py), and a stream
# failed for good by a server's restart would wait for an operator for nothing.
RETRYABLE_CODES = frozenset(
    {"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED", "CANCELLED"}
)

# api_core exceptions raised from HTTP paths carry only an HTTP code.
HTTP_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    412: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def status_name(exc: BaseException) -> str:
    """Return the gRPC status name of an exception (UNKNOWN when it carries none)."""
    if isinstance(exc, api_exceptions.GoogleAPICallError):
        if exc.grpc_status_code is not None:
            return exc.grpc_status_code.name
        return HTTP_STATUS.get(exc.code, "UNKNOWN")
    if isinstance(exc, grpc.RpcError) and callable(getattr(exc, "code", None)):
        status = exc.code()
        return status.name if isinstance(status, grpc.StatusCode) else "UNKNOWN"
    if isinstance(exc, ConnectionError | TimeoutError):
        return "UNAVAILABLE"  # a broken socket below the client is the transport's fault
    return "UNKNOWN"


def server_message(exc: BaseException) -> str:
    """Return the message the server gave, or the exception's own text."""
    if isinstance(exc, api_exceptions.GoogleAPICallError):
        return exc.message or str(exc)
    if isinstance(exc, grpc.RpcError) and callable(getattr(exc, "details", None)):
        return exc.details() or str(exc)
    return str(exc) or type(exc).__name__
