"""The simulated schema: four tables, one per value capture type, and their row values.

What a mod carries follows the seed document: new_values / old_values hold only non-key
columns, and which of them are filled depends on the capture type and the mod type.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from functools import cache

from partitions.sources.spanner_change_stream.records import ColumnType, Mod

_WORDS = ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor", "iris", "juniper")
_STATUSES = ("NEW", "PAID", "PACKED", "SHIPPED", "DELIVERED", "CANCELLED")
_MONTH_US = 30 * 86400 * 1_000_000


def format_ts(us: int) -> str:
    """Return RFC 3339 text with microseconds and 'Z' for microseconds since 1970 UTC."""
    seconds, micros = divmod(us, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micros:06d}Z"


@dataclass(frozen=True)
class Table:
    """A table of the simulated database: name, capture type, columns (key first)."""

    name: str
    value_capture_type: str
    columns: tuple[tuple[str, dict, str], ...]  # (name, Spanner type, value kind)

    def __post_init__(self):
        # Computed once: make_mod asks for it for every write.
        object.__setattr__(self, "non_key", tuple(name for name, _, _ in self.columns[1:]))
        object.__setattr__(self, "kinds", {name: kind for name, _, kind in self.columns})


_ARRAY_OF_STRING = {"code": "ARRAY", "array_element_type": {"code": "STRING"}}
TABLES = (
    Table(
        "Orders",
        "OLD_AND_NEW_VALUES",
        (
            ("OrderId", {"code": "INT64"}, "key_int"),
            ("CustomerId", {"code": "INT64"}, "int"),
            ("Status", {"code": "STRING"}, "status"),
            ("Total", {"code": "NUMERIC"}, "numeric"),
            ("UpdatedAt", {"code": "TIMESTAMP"}, "ts"),
        ),
    ),
    Table(
        "Customers",
        "NEW_ROW",
        (
            ("CustomerId", {"code": "INT64"}, "key_int"),
            ("Name", {"code": "STRING"}, "name"),
            ("Tags", _ARRAY_OF_STRING, "tags"),
            ("Active", {"code": "BOOL"}, "bool"),
        ),
    ),
    Table(
        "Inventory",
        "NEW_VALUES",
        (
            ("Sku", {"code": "STRING"}, "key_sku"),
            ("Quantity", {"code": "INT64"}, "int"),
            ("Attributes", {"code": "JSON"}, "json"),
            ("UpdatedAt", {"code": "TIMESTAMP"}, "ts"),
        ),
    ),
    Table(
        "Payments",
        "NEW_ROW_AND_OLD_VALUES",
        (
            ("PaymentId", {"code": "STRING"}, "key_pay"),
            ("OrderId", {"code": "INT64"}, "int"),
            ("Amount", {"code": "NUMERIC"}, "numeric"),
            ("Captured", {"code": "BOOL"}, "bool"),
            ("CapturedAt", {"code": "TIMESTAMP"}, "ts"),
        ),
    ),
)
TABLES_BY_NAME = {t.name: t for t in TABLES}


def key_value(table: Table, key: int):
    """Return the primary key value a key-space position stands for in this table."""
    kind = table.columns[0][2]
    if kind == "key_int":
        return key
    return f"SKU-{key:08x}" if kind == "key_sku" else f"pay-{key:08x}"


def _value(kind: str, rng: random.Random, commit_us: int, new: bool):
    # Ordered by frequency; every kind yields what Spanner puts in a mod's JSON.
    if kind == "int":
        return rng.randrange(100_000)
    if kind == "ts":
        return format_ts(commit_us if new else commit_us - rng.randrange(_MONTH_US))
    if kind == "numeric":
        return f"{rng.randrange(100_000) / 100:.2f}"
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "status":
        return rng.choice(_STATUSES)
    if kind == "name":
        return f"{rng.choice(_WORDS).title()} {rng.choice(_WORDS).title()}"
    if kind == "tags":
        return [rng.choice(_WORDS) for _ in range(rng.randrange(3))]
    return json.dumps({"color": rng.choice(_WORDS), "weight_g": rng.randrange(1, 5000)}, sort_keys=True)


@cache
def column_types(table_name: str, names: tuple[str, ...]) -> tuple[ColumnType, ...]:
    """Return the column types of a record touching these columns (the key always)."""
    table = TABLES_BY_NAME[table_name]
    return tuple(
        ColumnType(name, type_, position == 1, position)
        for position, (name, type_, _) in enumerate(table.columns, start=1)
        if position == 1 or name in names
    )


def make_mod(
    table: Table, mod_type: str, changed: tuple[str, ...], key: int, rng: random.Random, commit_us: int
) -> tuple[Mod, tuple[str, ...]]:
    """Return one mod and the non-key columns its record's column_types must list.

    1. INSERT fills new_values with every column; DELETE fills old_values with every
       column when the capture type keeps old values, and never new_values.
    2. UPDATE changes ``changed``: NEW_ROW* types return the whole new row, the others
       only the changed columns; *OLD_VALUES types add the changed columns' old values.
    """
    kinds = table.kinds
    capture = table.value_capture_type
    keys = {table.columns[0][0]: key_value(table, key)}
    keeps_old = capture in ("OLD_AND_NEW_VALUES", "NEW_ROW_AND_OLD_VALUES")
    if mod_type == "INSERT":
        new = {c: _value(kinds[c], rng, commit_us, True) for c in table.non_key}
        return Mod(keys, new, {}), table.non_key
    if mod_type == "DELETE":
        old = {c: _value(kinds[c], rng, commit_us, False) for c in table.non_key} if keeps_old else {}
        return Mod(keys, {}, old), table.non_key
    whole_row = capture in ("NEW_ROW", "NEW_ROW_AND_OLD_VALUES")
    shown = table.non_key if whole_row else changed
    new = {c: _value(kinds[c], rng, commit_us, True) for c in shown}
    old = {c: _value(kinds[c], rng, commit_us, False) for c in changed} if keeps_old else {}
    return Mod(keys, new, old), shown
