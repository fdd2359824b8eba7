"""Row-range coverage, cursors, child readiness and partition tokens: pure rules, no server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from partitions.sources.base import NewPartition, PartitionState, ReadOptions
from partitions.sources.bigtable.cursor import (
    Token,
    child_ready,
    merge_cursor,
    origin,
    place_child,
    reread_cursor,
    root_cursor,
    split_generation,
    tokens_cursor,
)
from partitions.sources.bigtable.ranges import RowRange, covers, key_text, label, range_token
from partitions.sources.bigtable.reader import BigtableRead

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
ALL = RowRange(b"", b"")


def r(start: str, end: str) -> RowRange:
    return RowRange(start.encode(), end.encode())


@pytest.mark.parametrize(
    ("target", "pieces"),
    [
        (ALL, [ALL]),
        (ALL, [r("", "m"), r("m", "")]),
        (ALL, [r("m", ""), r("", "f"), r("f", "m")]),  # in any order
        (r("b", "d"), [r("b", "c"), r("c", "d")]),
        (r("", "d"), [r("", "d")]),
        (r("b", ""), [r("b", "c"), r("c", "")]),
    ],
)
def test_pieces_that_tile_the_range_cover_it(target, pieces):
    assert covers(target, pieces)


@pytest.mark.parametrize(
    ("target", "pieces", "why"),
    [
        (ALL, [], "no pieces"),
        (ALL, [r("", "m")], "the unbounded end is missing"),
        (ALL, [r("a", "")], "the unbounded start is missing"),
        (r("b", "d"), [r("b", "c"), r("c2", "d")], "a gap"),
        (r("b", "d"), [r("b", "c5"), r("c", "d")], "an overlap"),
        (r("b", "d"), [r("b", "d"), r("b", "d")], "the same piece twice"),
        (r("b", "d"), [r("a", "d")], "a piece starting before the range"),
        (r("b", "d"), [r("b", "e")], "a piece ending after the range"),
        (r("b", "d"), [r("b", "")], "an unbounded piece in a bounded range"),
        (r("b", ""), [r("b", "z")], "a bounded piece in an unbounded range"),
        (r("b", "d"), [r("b", "c"), r("c", "c"), r("c", "d")], "an empty piece"),
    ],
)
def test_pieces_with_gaps_overlaps_or_strays_do_not_cover(target, pieces, why):
    assert not covers(target, pieces), why


def test_a_root_is_ready_at_once_and_a_split_child_with_its_token():
    # given a root read from a time, and a split child handed its whole range
    root = PartitionState("root", T0, T0, root_cursor(ALL))
    child = PartitionState("child", T0, T0, tokens_cursor(r("", "m"), [Token(r("", "m"), "t1")]))
    # then both may be read now
    assert child_ready(root, parents_finished=False)
    assert child_ready(child, parents_finished=False)


def test_a_merged_child_waits_until_every_parent_handed_over_its_tokens():
    # given a child [b, d) announced by its parent [b, c) only
    left = tokens_cursor(r("b", "d"), [Token(r("b", "c"), "left")], low_watermark=T1)
    stored = merge_cursor({}, left)
    # then it waits, whatever the pipeline thinks of its parents
    assert not child_ready(PartitionState("c", T0, T0, stored), parents_finished=True)
    # when the other parent [c, d) closes too
    right = tokens_cursor(r("b", "d"), [Token(r("c", "d"), "right")], low_watermark=T0)
    stored = merge_cursor(stored, right)
    # then the child is ready, starts from both tokens, and is as far as its slower parent
    assert child_ready(PartitionState("c", T0, T0, stored), parents_finished=False)
    assert [t["token"] for t in stored["tokens"]] == ["left", "right"]
    assert stored["low_watermark"] == T0.isoformat()


def test_a_contribution_applied_twice_changes_nothing():
    # given a child holding one parent's token
    contribution = tokens_cursor(r("b", "d"), [Token(r("b", "c"), "left")])
    once = merge_cursor({}, contribution)
    # when the same parent's contribution is applied again (a retried checkpoint)
    twice = merge_cursor(once, contribution)
    # then the cursor is the same, and still not ready (no overlap was created)
    assert twice == once
    assert not child_ready(PartitionState("c", T0, T0, twice), parents_finished=True)


def test_cursors_of_different_ranges_are_not_merged():
    with pytest.raises(ValueError, match="different ranges"):
        merge_cursor(root_cursor(r("a", "b")), root_cursor(r("a", "c")))


def _child(row_range: RowRange, piece: RowRange, token: str) -> NewPartition:
    cursor = tokens_cursor(row_range, [Token(piece, token)])
    return NewPartition(range_token(row_range), T0, cursor=cursor, label=label(row_range))


def test_a_range_that_recurs_gets_a_new_generation_token():
    # given a merged child [b, d) announced by its left parent
    first = _child(r("b", "d"), r("b", "c"), "left")
    token, merge = place_child(first, {})
    assert (token, merge) == (first.token, False)
    known = {token: first.cursor}
    # when its right parent announces it: the contribution goes to the same partition
    second = _child(r("b", "d"), r("c", "d"), "right")
    assert place_child(second, known) == (first.token, True)
    known[token] = merge_cursor(known[token], second.cursor)
    # when later the same range comes back (it split, then merged again)
    again = _child(r("b", "d"), r("b", "c"), "left-again")
    new_token, merge = place_child(again, known)
    # then it is a new partition, a generation of the same range
    assert not merge
    assert split_generation(new_token) == (first.token, 1)


def test_a_child_with_the_range_of_a_root_is_a_new_generation():
    root = NewPartition(range_token(ALL), T0, cursor=root_cursor(ALL), label=label(ALL))
    child = _child(ALL, ALL, "t")
    token, merge = place_child(child, {root.token: root.cursor})
    assert not merge
    assert token != root.token


def test_range_tokens_are_stable_short_and_distinct():
    long_key = b"k" * 4096
    assert range_token(r("a", "b")) == range_token(r("a", "b"))
    assert range_token(r("a", "b")) != range_token(r("a", "bb"))
    assert range_token(r("ab", "")) != range_token(r("a", "b"))  # no ambiguity when keys are joined
    assert len(range_token(RowRange(long_key, long_key + b"z"))) == len(range_token(ALL)) < 40


@pytest.mark.parametrize(
    ("row_range", "text"),
    [
        (ALL, "[-inf, +inf)"),
        (r("row#00", "row#80"), "[row#00, row#80)"),
        (RowRange(b"\x00\xff", b""), "[0x00ff, +inf)"),
        (RowRange(b"", b"0xab"), "[-inf, 0x30786162)"),  # printable but ambiguous: hex
    ],
)
def test_labels_show_printable_keys_as_text_and_others_in_hex(row_range, text):
    assert label(row_range) == text


def test_key_text_of_an_empty_qualifier_is_empty():
    assert key_text(b"") == ""


def test_a_merged_child_starts_at_the_lower_of_its_parents_watermarks():
    # given a child stored with the first parent's start, and a slower parent's watermark handed over
    cursor = merge_cursor(
        tokens_cursor(r("b", "d"), [Token(r("b", "c"), "left")], low_watermark=T1),
        tokens_cursor(r("b", "d"), [Token(r("c", "d"), "right")], low_watermark=T0),
    )
    child = PartitionState("c", T1, T1, cursor)
    # when a read of it is made (nothing is sent before it is iterated)
    read = BigtableRead(None, "projects/p/instances/i/tables/t", "default", child, None, ReadOptions(1000))
    # then its watermark starts at the slower parent's, and it resumes from both tokens
    assert read.watermark == T0
    assert [t["token"] for t in read.cursor["tokens"]] == ["left", "right"]


@pytest.mark.parametrize(
    ("a", "b", "both"),
    [
        (ALL, r("b", "d"), r("b", "d")),
        (r("", "m"), r("f", ""), r("f", "m")),
        (r("b", "d"), r("d", "f"), None),
        (r("b", ""), r("", "c"), r("b", "c")),
        (ALL, ALL, ALL),
    ],
)
def test_the_intersection_of_two_ranges_is_the_keys_both_hold(a, b, both):
    assert a.intersection(b) == both
    assert b.intersection(a) == both


def test_a_read_child_keeps_its_origin_and_a_reread_starts_there_or_at_the_time():
    # given a merged child handed over by two parents, at T0 and T1, as its read keeps it
    cursor = merge_cursor(
        tokens_cursor(r("b", "d"), [Token(r("b", "c"), "left")], low_watermark=T0),
        tokens_cursor(r("b", "d"), [Token(r("c", "d"), "right")], low_watermark=T1),
    )
    read = BigtableRead(
        None,
        "projects/p/instances/i/tables/t",
        "default",
        PartitionState("c", T0, T0, cursor),
        None,
        ReadOptions(1000),
    )
    begin = origin(read.cursor)
    # then its origin is both parents' tokens, until the later parent's watermark
    assert ([t.token for t in begin.tokens], begin.until) == (["left", "right"], T1)
    # and a re-read up to that watermark starts from them, after it from the time alone
    assert [t["token"] for t in reread_cursor(read.cursor, T1)["tokens"]] == ["left", "right"]
    later = reread_cursor(read.cursor, T1 + timedelta(microseconds=1))
    assert later["tokens"] == []
    assert origin(later) == begin


def test_a_root_is_read_again_from_the_time():
    cursor = reread_cursor({**root_cursor(ALL), "tokens": [], "origin": {"tokens": [], "until": None}}, T1)
    assert (cursor["tokens"], origin(cursor).tokens) == ([], [])
