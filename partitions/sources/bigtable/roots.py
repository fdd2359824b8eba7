"""The partitions a stream starts with: GenerateInitialChangeStreamPartitions."""

from __future__ import annotations

from datetime import datetime

from google.cloud.bigtable_v2.types import GenerateInitialChangeStreamPartitionsResponse

from partitions.sources.base import MalformedRecordError, NewPartition, ReadOptions

from .cursor import root_cursor
from .errors import classify
from .ranges import label, range_token
from .requests import partition_range

ROOTS_TIMEOUT_S = 60.0  # the client's own default for this call
_RESPONSE_PB = GenerateInitialChangeStreamPartitionsResponse.pb


def initial_partitions(
    client, table_name: str, app_profile: str, at: datetime, options: ReadOptions
) -> list[NewPartition]:
    """Return one root per partition the table has now, to be read from ``at``.

    The partitions are today's; if ``at`` lies in the past the table may have been cut
    differently then, and the first read of a root answers with a CloseStream that
    hands over tokens for the partitions of that time (the reader follows it).
    """
    try:
        responses = client.generate_initial_change_stream_partitions(
            request={"table_name": table_name, "app_profile_id": app_profile},
            timeout=options.timeout or ROOTS_TIMEOUT_S,
        )
        ranges = [partition_range(_RESPONSE_PB(r).partition) for r in responses]
    except ValueError as error:
        raise MalformedRecordError(f"malformed initial partition of {table_name}: {error}") from None
    except Exception as exc:  # the client raises many kinds; classify says which are retryable
        raise classify(exc, table_name, app_profile) from exc
    return [
        NewPartition(token=range_token(r), start=at, cursor=root_cursor(r), label=label(r))
        for r in sorted(ranges, key=lambda r: r.start)
    ]
