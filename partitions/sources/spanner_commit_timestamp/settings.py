"""The kind's connection settings: their declarations, and the checks ``clean()`` applies.

Table, column and index names end up in SQL text (a name cannot be a query parameter),
so each one must match a strict identifier pattern before any query is built; a name
that does not is refused here with a message naming the setting, never quoted around.
"""

from __future__ import annotations

import re
from typing import Any

from partitions.sources import spanner_settings as common
from partitions.sources.base import Setting, SettingsError
from partitions.sources.spanner_settings import check_identifier

_SHARD_RANGE = re.compile(r"(?P<lo>-?\d+)\s*-\s*(?P<hi>-?\d+)")
_INT = re.compile(r"-?\d+")
# Every shard is a partition, read with its own query each poll interval: beyond this
# many the polls alone would keep a worker busy, so a longer list is refused.
MAX_SHARDS = 1_000

SETTINGS = (
    *common.DATABASE_SETTINGS,
    Setting("table", "Table", help="the table to watch", cli="--table"),
    Setting(
        "timestamp_column",
        "Commit timestamp column",
        help="a TIMESTAMP column with allow_commit_timestamp=true, written on every insert and update",
        cli="--timestamp-column",
    ),
    Setting(
        "key_columns",
        "Primary key columns",
        type="list",
        help="the table's primary key columns, in key order",
        cli="--key-columns",
    ),
    Setting(
        "shard_column",
        "Shard column",
        required=False,
        default="",
        help="a column that spreads rows over shards, e.g. MOD(FARM_FINGERPRINT(...), 19) STORED",
        cli="--shard-column",
    ),
    Setting(
        "shards",
        "Shards",
        type="list",
        required=False,
        default=(),
        help='the shard values to watch, one partition each: "0-18", "-18-18" or "a,b,c"',
        cli="--shards",
    ),
    Setting(
        "index",
        "Index",
        required=False,
        default="",
        help="a (NULL_FILTERED) index on (shard column, timestamp column) to force with FORCE_INDEX",
        cli="--index",
    ),
    common.EMULATOR_HOST,
)


def parse_shards(value: Any) -> tuple[int | str, ...]:
    """Return the shard values of "0-18", "a,b,c" or a list of such items, in the order given.

    A range of integers ("-18-18" included) expands to every value in it; an item that
    is an integer becomes an int (bound as INT64), anything else stays a string. Raise
    ValueError for an empty item, a reversed range, duplicates or too many shards.
    """
    items = value.split(",") if isinstance(value, str) else list(value or ())
    shards: list[int | str] = []
    for raw in items:
        shards.extend(_shard_item(raw))
        if len(shards) > MAX_SHARDS:
            raise ValueError(f"at most {MAX_SHARDS:,} shards, one partition each")
    duplicates = sorted({str(s) for s in shards if shards.count(s) > 1})
    if duplicates:
        raise ValueError(f"shard values listed twice: {', '.join(duplicates)}")
    return tuple(shards)


def _shard_item(raw: Any) -> list[int | str]:
    """Return the shard values one list item stands for: an int, a range of ints, or a string."""
    if isinstance(raw, bool):
        raise ValueError(f"invalid shard value {raw!r}")
    if isinstance(raw, int):
        return [raw]
    text = str(raw).strip()
    if not text:
        raise ValueError("empty shard value")
    if _INT.fullmatch(text):
        return [int(text)]
    match = _SHARD_RANGE.fullmatch(text)
    if match is None:
        return [text]
    lo, hi = int(match["lo"]), int(match["hi"])
    if hi < lo:
        raise ValueError(f"shard range {text!r} runs backwards: write the lower bound first")
    if hi - lo >= MAX_SHARDS:
        raise ValueError(f"shard range {text!r} has more than {MAX_SHARDS:,} values")
    return list(range(lo, hi + 1))


def parse_list(value: Any) -> list[str]:
    """Return a list setting's items: a comma-separated string or a list, items stripped."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(item).strip() for item in items if str(item).strip()]


def clean(values: dict[str, Any]) -> dict[str, Any]:
    """Return the settings cleaned (types, defaults), or raise SettingsError naming each bad one."""
    errors: dict[str, str] = {}
    cleaned: dict[str, Any] = {}
    for name, check in _CHECKS:
        try:
            cleaned[name] = check(values.get(name))
        except ValueError as error:
            errors[name] = str(error)
    _check_sharding(cleaned, errors)
    unknown = sorted(set(values) - {s.name for s in SETTINGS})
    if unknown:
        errors["settings"] = f"unknown settings: {', '.join(unknown)}"
    if errors:
        raise SettingsError(errors)
    return cleaned


def _identifier(what: str, required: bool):
    """Return a check for a setting that names a schema object."""

    def check(value: Any) -> str:
        """Return the identifier stripped ("" if optional and blank), if it is a plain name."""
        text = str(value or "").strip()
        if not text and required:
            raise ValueError(f"the {what} is required")
        return check_identifier(text, what) if text else ""

    return check


def _key_columns(value: Any) -> list[str]:
    """Return the key column names, each a plain identifier, none twice."""
    names = parse_list(value)
    if not names:
        raise ValueError("list the table's primary key columns, in key order")
    for name in names:
        check_identifier(name, "key column")
    if len(set(names)) != len(names):
        raise ValueError("a key column is listed twice")
    return names


def _shards(value: Any) -> list[int | str]:
    """Return the shard values as a list (empty when unsharded)."""
    return list(parse_shards(value if value not in (None, "") else ()))


_CHECKS = (
    *common.DATABASE_CHECKS[:4],
    ("table", _identifier("table name", required=True)),
    ("timestamp_column", _identifier("timestamp column", required=True)),
    ("key_columns", _key_columns),
    ("shard_column", _identifier("shard column", required=False)),
    ("shards", _shards),
    ("index", _identifier("index name", required=False)),
    ("emulator_host", common.emulator_host),
)


def _check_sharding(cleaned: dict[str, Any], errors: dict[str, str]) -> None:
    """Require shards with a shard column and a shard column with shards."""
    column, shards = cleaned.get("shard_column"), cleaned.get("shards")
    if column and shards == [] and "shards" not in errors:
        errors["shards"] = "a shard column needs the shard values to watch, e.g. 0-18"
    if shards and not column and "shard_column" not in errors:
        errors["shard_column"] = "shard values need the shard column they are values of"
    if column and column == cleaned.get("timestamp_column"):
        errors["shard_column"] = "the shard column cannot be the timestamp column"
