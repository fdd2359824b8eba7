"""Errors of the change stream reader, classified as retryable or permanent."""

from __future__ import annotations


class ChangeStreamError(Exception):
    """Base class of every error the change stream package raises."""


class QueryValidationError(ChangeStreamError, ValueError):
    """A query argument is invalid; nothing was sent to Spanner."""


class ChangeRecordError(ChangeStreamError):
    """A row returned by Spanner is not a well-formed change record."""

    def __init__(self, message: str, *, field: str, partition_token: str | None):
        self.field = field
        self.partition_token = partition_token
        where = partition_token if partition_token is not None else "initial query"
        super().__init__(f"{message} (field {field!r}, partition {where})")


class SpannerError(ChangeStreamError):
    """An error Spanner (or the transport) returned; see the subclasses."""

    retryable = False

    def __init__(self, message: str, *, code: str):
        self.code = code
        super().__init__(f"{code}: {message}")


class RetryableSpannerError(SpannerError):
    """A transient error: the same query may succeed when tried again."""

    retryable = True


class PermanentSpannerError(SpannerError):
    """An error that retrying cannot fix (bad argument, missing object, no access)."""
