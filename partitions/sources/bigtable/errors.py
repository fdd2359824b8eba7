"""Turn failures of the Bigtable client or transport into the contract's source errors.

Retryable: UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, RESOURCE_EXHAUSTED (the same read
may succeed later). Everything else is permanent, and the ones a user can fix get a
message that says what to change: a missing table, a table without a change stream, a
start time older than the retention period, an app profile without single-cluster
routing, missing access.
"""

from __future__ import annotations

import grpc
from google.api_core import exceptions as api_exceptions

from partitions.sources.base import PermanentSourceError, RetryableSourceError, SourceError
from partitions.sources.grpc_status import RETRYABLE_CODES, server_message, status_name

SINGLE_CLUSTER = "the app profile must use single-cluster routing"


def classify(exc: BaseException, table: str, app_profile: str) -> SourceError:
    """Return the retryable or permanent error for an exception of the client or transport."""
    if isinstance(exc, SourceError):
        return exc
    if isinstance(exc, api_exceptions.RetryError) and exc.cause is not None:
        return classify(exc.cause, table, app_profile)
    return from_status(status_name(exc), server_message(exc), table, app_profile)


def from_status(code: str, message: str, table: str, app_profile: str) -> SourceError:
    """Return the error for a gRPC status name and message (a call's, or a CloseStream's)."""
    if code in RETRYABLE_CODES:
        return RetryableSourceError(message, code=code)
    return PermanentSourceError(explain(code, message, table, app_profile), code=code)


def code_name(code: int) -> str:
    """Return the name of a numeric google.rpc.Code (UNKNOWN for numbers it does not know)."""
    return _CODE_NAMES.get(code, "UNKNOWN")


_CODE_NAMES = {status.value[0]: status.name for status in grpc.StatusCode}


def explain(code: str, message: str, table: str, app_profile: str) -> str:
    """Return a permanent failure's message, rephrased where the user can fix the cause."""
    lowered = message.lower()
    if "single cluster" in lowered or "single-cluster" in lowered:
        return (
            f"{SINGLE_CLUSTER}: app profile {app_profile!r} routes to several clusters, and change "
            f"streams can only be read through one cluster ({message})"
        )
    if "change stream" in lowered and ("not enabled" in lowered or "disabled" in lowered):
        return (
            f"change streams are not enabled on table {table}: enable them with a retention of 1 to 7 "
            f"days (gcloud bigtable instances tables update ... --change-stream-retention-period) ({message})"
        )
    if "retention" in lowered:
        return (
            f"the start time is older than the change stream retention period of table {table}: "
            f"the records before it are gone; start the stream later ({message})"
        )
    if code == "NOT_FOUND" and "app profile" in lowered:
        return f"app profile {app_profile!r} was not found in the instance ({message})"
    if code == "NOT_FOUND":
        return f"table {table} was not found: check the project, instance and table settings ({message})"
    if code in ("PERMISSION_DENIED", "UNAUTHENTICATED"):
        return f"no access to table {table}: the credentials need the Bigtable Reader role ({message})"
    return message
