"""The source kind "spanner_change_stream": a Spanner change stream, read partition by partition."""

from __future__ import annotations

from typing import Any

from partitions.sources import spanner_settings as common
from partitions.sources.base import Setting
from partitions.sources.kinds import OwnTokens, ReadKind

from .landing import READ_METHOD
from .query import validate_stream_name
from .reader import connect
from .source import ChangeStreamSource

DIALECT_NAMES = {"googlesql": ", GoogleSQL", "postgresql": ", PostgreSQL"}
SETTINGS = (
    *common.DATABASE_SETTINGS,
    Setting("change_stream", "Change stream", help="the change stream's name", cli="--change-stream"),
    common.EMULATOR_HOST,
)


def _change_stream(value: Any) -> str:
    try:
        return validate_stream_name(str(value or "").strip())
    except ValueError as error:
        raise ValueError(str(error)) from None


class SpannerChangeStreamKind(OwnTokens, ReadKind):
    """Spanner change streams: partitions that split and merge, read window by window."""

    name = "spanner_change_stream"
    label = "Spanner change stream"
    read_method = READ_METHOD
    settings = SETTINGS
    lineage = True
    windows = True  # a read covers [watermark, watermark + window]; the next one starts at once

    def clean(self, values: dict[str, Any]) -> dict[str, Any]:
        """Return the settings cleaned, or raise SettingsError naming each bad one."""
        checks = (*common.DATABASE_CHECKS, ("change_stream", _change_stream))
        cleaned, errors = common.run_checks(values, checks, SETTINGS)
        common.raise_if(errors)
        return cleaned

    def connect(self, values: dict[str, Any]) -> ChangeStreamSource:
        """Return a Source for cleaned settings (SPANNER_EMULATOR_HOST applies when no host is set)."""
        database = connect(
            values["project"], values["instance"], values["database"], values.get("emulator_host") or None
        )
        return ChangeStreamSource(database, values)

    def describe(self, values: dict[str, Any]) -> str:
        """Return one line naming the source, as pages show it."""
        dialect = DIALECT_NAMES.get(values.get("dialect", ""), "")
        where = f"{values.get('project')}/{values.get('instance')}/{values.get('database')}"
        return f"{where}: change stream {values.get('change_stream')}{dialect}"


KIND = SpannerChangeStreamKind()
