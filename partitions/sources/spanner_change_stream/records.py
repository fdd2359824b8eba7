"""Typed change stream records, one frozen dataclass per record kind.

Field names follow the Spanner change stream documentation (seed 000) exactly, so a
record printed as JSON uses the same names a Spanner user already knows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from datetime import datetime
from typing import Any

MOD_TYPES = ("INSERT", "UPDATE", "DELETE")
VALUE_CAPTURE_TYPES = (
    "OLD_AND_NEW_VALUES",
    "NEW_ROW",
    "NEW_VALUES",
    "NEW_ROW_AND_OLD_VALUES",
)


@dataclass(frozen=True, slots=True)
class ColumnType:
    """One column of the changed table: name, Spanner type, key flag, position."""

    name: str
    type: dict[str, Any]
    is_primary_key: bool
    ordinal_position: int


@dataclass(frozen=True, slots=True)
class Mod:
    """One changed row: key columns, and the new and old non-key values captured."""

    keys: dict[str, Any]
    new_values: dict[str, Any]
    old_values: dict[str, Any]


@dataclass(frozen=True, slots=True)
class DataChangeRecord:
    """Changes of one mod type to one table, in one transaction, in one partition."""

    commit_timestamp: datetime
    record_sequence: str
    server_transaction_id: str
    is_last_record_in_transaction_in_partition: bool
    table_name: str
    column_types: tuple[ColumnType, ...]
    mods: tuple[Mod, ...]
    mod_type: str
    value_capture_type: str
    number_of_records_in_transaction: int
    number_of_partitions_in_transaction: int
    transaction_tag: str
    is_system_transaction: bool

    @property
    def order_key(self) -> tuple[datetime, str, str]:
        """Return the key that orders records and, with the partition token, dedupes them."""
        return (self.commit_timestamp, self.server_transaction_id, self.record_sequence)


@dataclass(frozen=True, slots=True)
class HeartbeatRecord:
    """Every change with a commit timestamp <= timestamp has been returned."""

    timestamp: datetime


@dataclass(frozen=True, slots=True)
class ChildPartition:
    """A partition to query next; an empty parent tuple marks a root partition."""

    token: str
    parent_partition_tokens: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ChildPartitionsRecord:
    """Partitions that start at start_timestamp; the queried partition ends there."""

    start_timestamp: datetime
    record_sequence: str
    child_partitions: tuple[ChildPartition, ...]


ChangeRecord = DataChangeRecord | HeartbeatRecord | ChildPartitionsRecord


def record_timestamp(record: ChangeRecord) -> datetime:
    """Return the timestamp up to which a record proves progress in its partition."""
    if isinstance(record, DataChangeRecord):
        return record.commit_timestamp
    if isinstance(record, HeartbeatRecord):
        return record.timestamp
    return record.start_timestamp


def positional_builder(cls: type) -> Callable[..., Any]:
    """Return a function building ``cls`` from all its field values, in field order.

    It gives the same object as ``cls(*values)`` about twice as fast for a frozen slotted
    dataclass, whose ``__init__`` calls ``object.__setattr__`` once per field: this one
    calls each slot's setter directly, unrolled as dataclasses' own generated code is.
    The decoders' hot paths use it (profile, issue 22). Refuses a class whose
    ``__init__`` does more: a ``__post_init__``, a default, no slots.
    """
    found = fields(cls)
    if (
        hasattr(cls, "__post_init__")
        or not hasattr(cls, "__slots__")
        or any(f.default is not MISSING or f.default_factory is not MISSING for f in found)
    ):
        raise TypeError(f"{cls.__name__} needs its own __init__")
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for index, f in enumerate(found):
        namespace[f"_set{index}"] = cls.__dict__[f.name].__set__
    params = ", ".join(f"v{index}" for index in range(len(found)))
    sets = "".join(f"\n    _set{index}(record, v{index})" for index in range(len(found)))
    exec(f"def build({params}):\n    record = _new(_cls){sets}\n    return record", namespace)  # noqa: S102
    build = namespace["build"]
    build.__qualname__ = build.__name__ = f"build_{cls.__name__}"
    return build
