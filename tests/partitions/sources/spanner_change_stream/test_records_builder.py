"""positional_builder builds the same frozen records as the dataclass constructor."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from partitions.sources.spanner_change_stream.records import (
    ChildPartition,
    DataChangeRecord,
    Mod,
    positional_builder,
)

VALUES = (datetime(2024, 5, 1, tzinfo=UTC), "1", "tx", True, "T", (), (Mod({"Id": "1"}, {}, {}),),
          "INSERT", "NEW_ROW", 1, 1, "", False)  # fmt: skip


def test_a_built_record_equals_the_constructed_one():
    built = positional_builder(DataChangeRecord)(*VALUES)
    made = DataChangeRecord(*VALUES)
    assert type(built) is DataChangeRecord
    assert built == made
    assert dataclasses.astuple(built) == dataclasses.astuple(made)


def test_a_built_hashable_record_hashes_as_the_constructed_one():
    assert hash(positional_builder(ChildPartition)("a", ("b",))) == hash(ChildPartition("a", ("b",)))


def test_a_built_record_stays_frozen():
    built = positional_builder(ChildPartition)("a", ("b",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.token = "c"


def test_a_wrong_count_of_values_is_refused():
    with pytest.raises(TypeError):
        positional_builder(Mod)({}, {})


@dataclasses.dataclass(frozen=True, slots=True)
class _WithDefault:
    value: int = 1


@dataclasses.dataclass(frozen=True, slots=True)
class _WithPostInit:
    value: int

    def __post_init__(self) -> None:
        pass


@dataclasses.dataclass(frozen=True)
class _WithoutSlots:
    value: int


@pytest.mark.parametrize("cls", [_WithDefault, _WithPostInit, _WithoutSlots])
def test_classes_whose_init_does_more_are_refused(cls):
    with pytest.raises(TypeError):
        positional_builder(cls)
