"""Errors of the change stream reader, as the contract's source errors (partitions/sources/base.py).

The pipeline sees only SourceError's classes: a query argument refused before sending
is permanent, a malformed row is a MalformedRecordError, and what Spanner (or the
transport) returned is retryable or permanent by its status.
"""

from __future__ import annotations

from partitions.sources.base import (
    MalformedRecordError,
    PermanentSourceError,
    RetryableSourceError,
    SourceError,
)


class QueryValidationError(PermanentSourceError, ValueError):
    """A query argument is invalid; nothing was sent to Spanner."""


class ChangeRecordError(MalformedRecordError):
    """A row returned by Spanner is not a well-formed change record."""

    def __init__(self, message: str, *, field: str, partition_token: str | None):
        self.field = field
        self.partition_token = partition_token
        where = partition_token if partition_token is not None else "initial query"
        super().__init__(f"{message} (field {field!r}, partition {where})")


class SpannerError(SourceError):
    """An error Spanner (or the transport) returned; see the subclasses."""

    def __init__(self, message: str, *, code: str):
        super().__init__(message, code=code)


class RetryableSpannerError(SpannerError, RetryableSourceError):
    """A transient error: the same query may succeed when tried again."""


class PermanentSpannerError(SpannerError, PermanentSourceError):
    """An error that retrying cannot fix (bad argument, missing object, no access)."""
