"""Classify what the Datastream and Monitoring clients raise as retryable or permanent SourceErrors.

A refusal keeps Datastream's own message (FAILED_PRECONDITION: "Stream ... can't be paused
because it hasn't been started.") so pages and the API can show it as it is. The original
exception is the ``__cause__`` of the one raised.
"""

from __future__ import annotations

from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions

from partitions.sources.base import PermanentSourceError, RetryableSourceError, SourceError
from partitions.sources.grpc_status import RETRYABLE_CODES, server_message, status_name

# INTERNAL is not retryable here: Datastream answers INTERNAL for invalid configurations
# too, and a retry loop would hide them.


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
    code, message = status_name(exc), server_message(exc)
    if code in RETRYABLE_CODES:
        return RetryableSourceError(message, code=code)
    return PermanentSourceError(message, code=code)
