"""Checks of a Bigtable change stream before a stream of it exists (pure Python, no Django).

Through the data API the reader uses, with a deadline each: the initial partitions call
tells whether the table exists, has its change stream on, and whether the app profile
routes to a single cluster (Bigtable refuses the call otherwise, and errors.explain
says which); then a read of the first partition from the start, bounded to one
millisecond, tells whether the start is inside the change stream's retention.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from google.cloud.bigtable_v2.types import GenerateInitialChangeStreamPartitionsResponse

from partitions.sources.base import ReadOptions, SourceError
from partitions.sources.checks import CHECK_TIMEOUT_S, Check, CheckFailed

from .client import data_client, emulator_host, table_path
from .errors import SINGLE_CLUSTER, classify
from .ranges import RowRange
from .requests import partition_range, read_request

_RESPONSE_PB = GenerateInitialChangeStreamPartitionsResponse.pb


def checks(values: dict[str, Any], start: datetime | None = None) -> list[Check]:
    """Return the table, change stream, app profile and retention checks of cleaned settings."""
    table, profile = values["table"], values["app_profile"]
    name = table_path(values["project"], values["instance"], table)
    found: dict[str, Any] = {}

    def initial() -> list[RowRange]:
        """Return the table's partitions now (asked once); the refusal as a SourceError."""
        if "ranges" not in found:
            try:
                responses = data_client(emulator_host()).generate_initial_change_stream_partitions(
                    request={"table_name": name, "app_profile_id": profile}, timeout=CHECK_TIMEOUT_S
                )
                found["ranges"] = [partition_range(_RESPONSE_PB(r).partition) for r in responses]
            except Exception as error:  # noqa: BLE001 - the client's errors, classified below
                found["ranges"] = classify(error, table, profile)
        if isinstance(found["ranges"], SourceError):
            raise found["ranges"]
        return found["ranges"]

    def refusal() -> str:
        """Return why the initial call was refused ("" if it was not)."""
        try:
            initial()
        except SourceError as error:
            return str(error)
        return ""

    def exists() -> str:
        message = refusal()
        if message and not (_about_stream(message) or _about_profile(message)):
            raise CheckFailed(message)
        return f"table {table} exists"

    def stream_on() -> str:
        if _about_stream(message := refusal()):
            raise CheckFailed(message)
        return f"the change stream of table {table} is on"

    def single_cluster() -> str:
        if _about_profile(message := refusal()):
            raise CheckFailed(message)
        return f"app profile {profile} routes to a single cluster"

    def retention() -> str:
        ranges = initial()
        at = min(start or datetime.now(UTC), datetime.now(UTC) - timedelta(seconds=1))
        request = read_request(
            name, profile, ranges[0], (), at, at + timedelta(milliseconds=1), ReadOptions(heartbeat_ms=1000)
        )
        try:
            for _ in data_client(emulator_host()).read_change_stream(
                request=request, timeout=CHECK_TIMEOUT_S
            ):
                break
        except Exception as error:  # noqa: BLE001 - the client's errors, classified
            raise CheckFailed(str(classify(error, table, profile))) from error
        return f"a read from {at.isoformat()} is accepted: the start is inside the retention"

    return [
        Check("table exists", "table", exists, needed=True),
        Check("change stream enabled", "table", stream_on),
        Check("app profile routes to one cluster", "app_profile", single_cluster),
        Check("start inside retention", "start_at", retention),
    ]


def _about_stream(message: str) -> bool:
    return "change streams are not enabled" in message


def _about_profile(message: str) -> bool:
    return SINGLE_CLUSTER in message or "app profile" in message.lower()
