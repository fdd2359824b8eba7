"""Assembling changes from DataChange messages: chunked values, chunked changes, malformed input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from google.cloud.bigtable_v2 import types as bt

from partitions.sources.base import MalformedRecordError
from partitions.sources.bigtable.decode import ChangeAssembler
from partitions.sources.bigtable.records import USER, DeleteFromFamily, SetCell

DataChange = bt.ReadChangeStreamResponse.DataChange.pb()


def first(**fields) -> DataChange:
    """Return the first message of a user change of row r1, committed at 1,700,000,000.5."""
    dc = DataChange(type_=1, source_cluster_id="c1", row_key=b"r1", tiebreaker=9, **fields)
    dc.commit_timestamp.seconds, dc.commit_timestamp.nanos = 1_700_000_000, 500_000_999
    return dc


def last(dc: DataChange, token: str = "tok") -> DataChange:
    dc.done, dc.token = True, token
    dc.estimated_low_watermark.seconds = 1_700_000_000
    return dc


def continuation() -> DataChange:
    return DataChange(type_=3)


def value_chunk(
    dc: DataChange, value: bytes, offset: int, size: int, is_last: bool, head: bool = False
) -> None:
    chunk = dc.chunks.add()
    chunk.chunk_info.chunked_value_size, chunk.chunk_info.chunked_value_offset = size, offset
    chunk.chunk_info.last_chunk = is_last
    cell = chunk.mutation.set_cell
    if head:
        cell.family_name, cell.column_qualifier, cell.timestamp_micros = "cf", b"q", 42
    cell.value = value


def test_a_value_chunked_over_three_messages_is_joined_with_the_mods_around_it():
    # given a change whose value comes in three chunks, between two other mods
    one = first()
    one.chunks.add().mutation.delete_from_family.family_name = "old"
    value_chunk(one, b"abc", 0, 8, False, head=True)
    two = continuation()
    value_chunk(two, b"def", 3, 8, False)
    three = continuation()
    value_chunk(three, b"gh", 6, 8, True)
    three.chunks.add().mutation.set_cell.value = b"small"
    assembler = ChangeAssembler()
    # when the messages are fed in order
    results = [assembler.feed(m) for m in (one, two, last(three))]
    # then only the last yields the change, with the value whole and every field converted
    assert results[:2] == [None, None]
    change = results[2]
    assert change.mods == (
        DeleteFromFamily("old"),
        SetCell("cf", b"q", 42, b"abcdefgh"),
        SetCell("", b"", 0, b"small"),
    )
    assert change.mods[1].value_size == 8
    assert (change.row_key, change.type, change.source_cluster_id, change.tiebreaker) == (
        b"r1",
        USER,
        "c1",
        9,
    )
    assert change.commit_timestamp == datetime(2023, 11, 14, 22, 13, 20, 500_000, tzinfo=UTC)
    assert change.token == "tok"
    assert change.estimated_low_watermark == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert not assembler.in_progress


def _two_chunks(second_offset: int, size: int) -> list[DataChange]:
    one = first()
    value_chunk(one, b"abc", 0, size, False, head=True)
    two = continuation()
    value_chunk(two, b"def", second_offset, size, True)
    return [one, last(two)]


def _with_mod(dc: DataChange) -> DataChange:
    dc.chunks.add().mutation.delete_from_family.family_name = "f"
    return dc


def _feed_all(assembler: ChangeAssembler, messages: list[DataChange]) -> None:
    for message in messages:
        assembler.feed(message)


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([continuation()], "must begin with type USER or GARBAGE_COLLECTION"),
        ([last(_with_mod(DataChange(type_=1, source_cluster_id="c", row_key=b"r")))], "no commit timestamp"),
        ([last(first())], "no mods"),
        (_two_chunks(4, 6), "came at offset 4, expected 3"),
        (_two_chunks(3, 7), "ended at 6 bytes, not its size 7"),
        (_two_chunks(3, 5), "grew to 6 bytes, beyond its size 5"),
        (
            [_with_mod(first()), _with_mod(first())],
            "a new change (type 1) began before the last one was done",
        ),
    ],
)
def test_malformed_messages_are_refused_with_what_is_wrong(messages, says):
    assembler = ChangeAssembler(where="[a, b)")
    with pytest.raises(MalformedRecordError, match="partition \\[a, b\\)") as caught:
        _feed_all(assembler, messages)
    assert says in str(caught.value)
    assert not assembler.in_progress


def test_a_gc_change_naming_a_cluster_is_refused():
    dc = _with_mod(first())
    dc.type_ = 2
    with pytest.raises(
        MalformedRecordError, match="GARBAGE_COLLECTION change must not name a source cluster"
    ):
        ChangeAssembler().feed(last(dc))


def test_a_change_without_a_token_is_refused():
    with pytest.raises(MalformedRecordError, match="no token"):
        ChangeAssembler().feed(last(_with_mod(first()), token=""))


def test_a_mutation_change_streams_do_not_carry_is_refused():
    dc = first()
    dc.chunks.add().mutation.add_to_cell.family_name = "agg"
    with pytest.raises(MalformedRecordError, match="mutation add_to_cell is not one"):
        ChangeAssembler().feed(last(dc))


def test_reset_drops_a_change_cut_off_mid_way():
    # given the first part of a chunked change
    assembler = ChangeAssembler()
    assembler.feed(_two_chunks(3, 6)[0])
    assert assembler.in_progress
    # when the stream broke and the change is sent again from its start
    assembler.reset()
    one, two = _two_chunks(3, 6)
    assert assembler.feed(one) is None
    change = assembler.feed(two)
    # then it is assembled once, whole
    assert change.mods == (SetCell("cf", b"q", 42, b"abcdef"),)
