"""Spanner and transport failures as the contract's retryable or permanent source errors.

The classification is the Spanner change stream reader's (reused by import); only the
message changes where a user can act on it: a table, column or index the settings name
that the database does not have is permanent, and says which setting to check.
"""

from __future__ import annotations

import re

from partitions.sources.base import PermanentSourceError, RetryableSourceError, SourceError
from partitions.sources.spanner_change_stream.errors import SpannerError
from partitions.sources.spanner_change_stream.reader import classify

from .query import TableSpec

_MISSING_INDEX = re.compile(r"secondary index|index .*not found|not found.*index", re.IGNORECASE)
_MISSING_NAME = re.compile(
    r"table not found|unrecognized name|column .*not found|does not exist", re.IGNORECASE
)


def source_error(exc: BaseException, spec: TableSpec, database: str) -> SourceError:
    """Return the retryable or permanent source error for a failure of a poll."""
    if isinstance(exc, SourceError):
        return exc
    error = classify(exc)
    message = _spanner_message(error)
    if error.retryable:
        return RetryableSourceError(message, code=error.code)
    if error.code == "NOT_FOUND" and "database" in message.lower():
        message = f"database {database} was not found ({message})"
    elif _MISSING_INDEX.search(message):
        message = f"index {spec.index} was not found on table {spec.table}: check the index ({message})"
    elif _MISSING_NAME.search(message):
        columns = ", ".join([spec.timestamp_column, *spec.key_columns, *filter(None, [spec.shard_column])])
        message = (
            f"table {spec.table} or one of its columns ({columns}) was not found in database {database}: "
            f"check the table and column settings ({message})"
        )
    return PermanentSourceError(message, code=error.code)


def _spanner_message(error: SpannerError) -> str:
    """Return Spanner's own message, without the code prefix the error adds."""
    return str(error).removeprefix(f"{error.code}: ")
