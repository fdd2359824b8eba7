"""Typed Bigtable change stream records: one change (a row's mutations in one commit) and its mods.

Field names follow the ReadChangeStream API (seed 003 and ``google.bigtable.v2``). A
change holds every mod applied to one row by one RPC, as the stream reports it once the
change's last message (``done``) arrived and its chunked values were reassembled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

USER = "USER"
GARBAGE_COLLECTION = "GARBAGE_COLLECTION"
CHANGE_TYPES = (USER, GARBAGE_COLLECTION)

SET_CELL = "SET_CELL"
DELETE_FROM_COLUMN = "DELETE_FROM_COLUMN"
DELETE_FROM_FAMILY = "DELETE_FROM_FAMILY"
DELETE_FROM_ROW = "DELETE_FROM_ROW"


@dataclass(frozen=True, slots=True)
class SetCell:
    """A cell written: family, qualifier, the cell's timestamp (micros) and its whole value."""

    family: str
    qualifier: bytes
    timestamp_micros: int
    value: bytes

    mod_type = SET_CELL

    @property
    def value_size(self) -> int:
        """Return the value's length in bytes (the chunked_value_size of a chunked value)."""
        return len(self.value)


@dataclass(frozen=True, slots=True)
class DeleteFromColumn:
    """Cells of one column deleted within [start, end) micros; end 0 means no upper bound."""

    family: str
    qualifier: bytes
    start_timestamp_micros: int
    end_timestamp_micros: int

    mod_type = DELETE_FROM_COLUMN


@dataclass(frozen=True, slots=True)
class DeleteFromFamily:
    """Every cell of one column family of the row deleted."""

    family: str

    mod_type = DELETE_FROM_FAMILY


@dataclass(frozen=True, slots=True)
class DeleteFromRow:
    """The whole row deleted.

    Bigtable usually reports a row delete as one DeleteFromFamily per family holding data
    (seed 003); the API still defines this mutation, so the reader accepts it.
    """

    mod_type = DELETE_FROM_ROW


Mod = SetCell | DeleteFromColumn | DeleteFromFamily | DeleteFromRow


@dataclass(frozen=True, slots=True)
class Change:
    """Every mod one RPC applied to one row, as one change stream data change record.

    ``type`` is USER or GARBAGE_COLLECTION; ``source_cluster_id`` names the cluster that
    received a user change and is empty for garbage collection. ``tiebreaker`` resolves
    conflicts between clusters writing the same cell at the same commit timestamp (the
    larger wins). ``token`` is the continuation token after this change, for the read's
    partition. ``estimated_low_watermark`` is Bigtable's *estimate* of a time no later
    change of the partition will precede; it is not a guarantee (seed 003).
    """

    row_key: bytes
    commit_timestamp: datetime
    tiebreaker: int
    type: str
    source_cluster_id: str
    mods: tuple[Mod, ...]
    token: str = ""
    estimated_low_watermark: datetime | None = None

    @property
    def is_garbage_collection(self) -> bool:
        """Return whether garbage collection, not a user, made this change."""
        return self.type == GARBAGE_COLLECTION
