"""A Bigtable partition's cursor: its row range and the continuation tokens to resume from.

A cursor is JSON (the pipeline stores it with each checkpoint)::

    {"range": [start hex, end hex],                       # the partition's rows; "" unbounded
     "tokens": [{"range": [start hex, end hex], "token": "..."}, ...],   # sorted by start
     "low_watermark": "2026-01-01T00:00:00+00:00",        # only while a child waits to start
     "handed_over_until": "2026-01-01T00:00:01+00:00",    # with it: the newest parent's watermark
     "delivered": "2026-01-01T00:00:00+00:00",            # the newest change the tokens are past
     "origin": {"tokens": [...], "until": "..."}}         # where its own changes begin (re-reads)

A root partition has no tokens: it is read from a start time. A child starts from the
tokens its parents handed over when they closed; it may be read once those tokens cover
its range exactly (``child_ready``). After the first item of a read the cursor holds one
token for the whole range, the latest the stream sent, and keeps the handed-over tokens
as its origin: a re-read from a time (``reread_cursor``) starts there or at the time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from partitions.sources.base import NewPartition, PartitionState

from .ranges import RowRange, covers, label

RANGE, TOKENS, LOW_WATERMARK, DELIVERED = "range", "tokens", "low_watermark", "delivered"
HANDED_UNTIL, ORIGIN = "handed_over_until", "origin"
_GENERATION_MARK = "~g"


class Token(NamedTuple):
    """One continuation token: the row range it resumes and the server's opaque token text."""

    row_range: RowRange
    token: str


def root_cursor(row_range: RowRange) -> dict[str, Any]:
    """Return the cursor of a partition read from a start time (no tokens yet)."""
    return {RANGE: row_range.to_json(), TOKENS: []}


def tokens_cursor(
    row_range: RowRange,
    tokens: Iterable[Token],
    low_watermark: datetime | None = None,
    handed_until: datetime | None = None,
) -> dict[str, Any]:
    """Return the cursor of a partition that resumes from these tokens.

    A child's cursor (its parents' handover) has the lowest watermark they handed over and
    the newest (``handed_until``: the low one unless given).
    """
    cursor: dict[str, Any] = {RANGE: row_range.to_json(), TOKENS: _tokens_json(tokens)}
    if low_watermark is not None:
        cursor[LOW_WATERMARK] = low_watermark.isoformat()
        cursor[HANDED_UNTIL] = (handed_until or low_watermark).isoformat()
    return cursor


def _tokens_json(tokens: Iterable[Token]) -> list[dict[str, Any]]:
    return [
        {RANGE: t.row_range.to_json(), "token": t.token}
        for t in sorted(tokens, key=lambda t: t.row_range.start)
    ]


def with_delivered(cursor: dict[str, Any], delivered: datetime | None) -> dict[str, Any]:
    """Return the cursor noting the commit timestamp of the newest change its tokens are past."""
    if delivered is not None:
        cursor[DELIVERED] = delivered.isoformat()
    return cursor


def delivered(cursor: Mapping[str, Any]) -> datetime | None:
    """Return the commit timestamp of the newest change the cursor's tokens are past, if noted."""
    value = cursor.get(DELIVERED)
    return datetime.fromisoformat(value) if value else None


def parse_cursor(cursor: Mapping[str, Any]) -> tuple[RowRange, list[Token]]:
    """Return (range, tokens) of a stored cursor; ValueError naming what is wrong."""
    try:
        row_range = RowRange.from_json(cursor[RANGE])
        tokens = [Token(RowRange.from_json(t[RANGE]), str(t["token"])) for t in cursor.get(TOKENS) or ()]
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"not a Bigtable partition cursor ({error!r:.80}): {dict(cursor)!r:.200}") from None
    return row_range, tokens


def low_watermark(cursor: Mapping[str, Any]) -> datetime | None:
    """Return the lowest watermark the parents of a waiting child reported, if any."""
    value = cursor.get(LOW_WATERMARK)
    return datetime.fromisoformat(value) if value else None


def handed_until(cursor: Mapping[str, Any]) -> datetime | None:
    """Return the newest watermark the parents of a waiting child handed over, if any."""
    value = cursor.get(HANDED_UNTIL) or cursor.get(LOW_WATERMARK)
    return datetime.fromisoformat(value) if value else None


class Origin(NamedTuple):
    """Where a partition's own changes begin: its parents' tokens (none for a root read from a time),
    and the newest watermark handed over with them (before it, a late parent was still reading)."""

    tokens: list[Token]
    until: datetime | None


def origin(cursor: Mapping[str, Any]) -> Origin | None:
    """Return the partition's origin, or None for one read before cursors kept it."""
    kept = cursor.get(ORIGIN)
    if kept is not None:
        until = kept.get("until")
        tokens = parse_cursor({RANGE: cursor[RANGE], TOKENS: kept.get(TOKENS) or []})[1]
        return Origin(tokens, datetime.fromisoformat(until) if until else None)
    _, tokens = parse_cursor(cursor)
    if LOW_WATERMARK in cursor:
        return Origin(tokens, handed_until(cursor))  # a handover not read yet
    return Origin([], None) if not tokens else None  # a root not read yet; else not kept


def with_origin(cursor: dict[str, Any], begin: Origin | None) -> dict[str, Any]:
    """Return the cursor keeping the partition's origin (if known)."""
    if begin is not None:
        until = begin.until.isoformat() if begin.until else None
        cursor[ORIGIN] = {TOKENS: _tokens_json(begin.tokens), "until": until}
    return cursor


def reread_cursor(cursor: Mapping[str, Any], at: datetime) -> dict[str, Any] | None:
    """Return the cursor that reads the partition again from ``at``, or None if it cannot.

    From the tokens its parents handed over when ``at`` is not after the newest parent's
    watermark (a merge's late parent was still reading its rows then: a read from a time
    would land them again under this partition); else from ``at`` as a start time, which
    a read takes back to those tokens if the server says the range was not a partition
    yet (``BigtableRead``). None for a partition read before its cursor kept its origin.
    """
    row_range, _ = parse_cursor(cursor)
    begin = origin(cursor)
    if begin is None:
        return None
    if begin.tokens and begin.until is not None and at <= begin.until:
        return with_origin(tokens_cursor(row_range, begin.tokens), begin)
    return with_origin(root_cursor(row_range), begin)


def merge_cursor(stored: Mapping[str, Any], contribution: Mapping[str, Any]) -> dict[str, Any]:
    """Return a child's cursor once one more parent handed over its tokens.

    The union of both token sets; a contributed token for a range already held replaces
    it, so applying one parent's contribution twice changes nothing. The lower of the two
    watermarks is kept: a merged child is only as far as its slowest parent.
    """
    if not stored:
        return dict(contribution)
    row_range, held = parse_cursor(stored)
    other_range, added = parse_cursor(contribution)
    if other_range != row_range:
        raise ValueError(f"cannot merge cursors of different ranges: {row_range} and {other_range}")
    by_range = {t.row_range: t for t in held}
    by_range.update((t.row_range, t) for t in added)
    lows = [w for w in (low_watermark(stored), low_watermark(contribution)) if w is not None]
    highs = [w for w in (handed_until(stored), handed_until(contribution)) if w is not None]
    return tokens_cursor(row_range, by_range.values(), min(lows) if lows else None, max(highs, default=None))


def is_covered(cursor: Mapping[str, Any]) -> bool:
    """Return whether the cursor's tokens tile its range exactly (no gap, no overlap)."""
    row_range, tokens = parse_cursor(cursor)
    return covers(row_range, (t.row_range for t in tokens))


def child_ready(child: PartitionState, parents_finished: bool) -> bool:
    """Return whether a partition may be read now.

    A root (no tokens) starts from its start time at once. A child waits until the
    tokens collected from its parents cover its row range exactly: at once for a split,
    after every parent closed for a merge. ``parents_finished`` is ignored: Bigtable does
    not name a child's parents, so the tokens are the only evidence.
    """
    _, tokens = parse_cursor(child.cursor)
    return not tokens or is_covered(child.cursor)


def generation_token(base: str, generation: int) -> str:
    """Return the token of one generation of a range: the base for the first, then base~gN."""
    return base if generation == 0 else f"{base}{_GENERATION_MARK}{generation}"


def split_generation(token: str) -> tuple[str, int]:
    """Return (base token, generation) of a token made by ``generation_token``."""
    base, mark, number = token.rpartition(_GENERATION_MARK)
    if mark and number.isdigit():
        return base, int(number)
    return token, 0


def place_child(child: NewPartition, known: Mapping[str, Mapping[str, Any]]) -> tuple[str, bool]:
    """Return (token to store the child under, whether to merge into the stored one).

    The same row range can come back (a split undone by a merge), and its token must
    then name a new partition, not the finished one. ``known`` maps the tokens of the
    stream's partitions of the child's range (every generation) to their cursors. The
    newest generation takes the contribution while it holds some tokens that do not yet
    cover it (its other parents have not closed); once covered, or if it is a root read
    from a time, it has started or may start, so the child is a new generation. Call it
    under the lock that serialises child creation.
    """
    base = child.token
    generations = sorted(split_generation(t)[1] for t in known if split_generation(t)[0] == base)
    if not generations:
        return base, False
    newest = generation_token(base, generations[-1])
    _, tokens = parse_cursor(known[newest])
    if tokens and not is_covered(known[newest]):
        return newest, True
    return generation_token(base, generations[-1] + 1), False


def complete_at_end(
    child: Mapping[str, Any], ended: Iterable[tuple[str, Mapping[str, Any]]]
) -> tuple[dict[str, Any], list[str]] | None:
    """Return a waiting child's cursor completed by partitions that reached the stream's end, or None.

    A bounded stream's end can fall between the closes of a merge's parents: one parent
    closed and handed over its tokens, the other read on to the end without closing.
    The latter's last tokens (``ended``: token and cursor of each partition that finished
    at the end without children) stand for its rows up to the end, so the child may read
    the closed parent's rows up to the end from them. Only partitions within the child's
    range, overlapping no token it holds, are taken, and only if they complete it.
    Return the cursor and the tokens of the partitions used.
    """
    row_range, held = parse_cursor(child)
    if not held or is_covered(child):
        return None
    pieces, added, used = [t.row_range for t in held], [], []
    for token, cursor in ended:
        own, tokens = parse_cursor(cursor)
        if not tokens or not own.within(row_range) or any(own.overlaps(p) for p in pieces):
            continue
        pieces.append(own)
        added += tokens
        used.append(token)
    if not covers(row_range, pieces):
        return None
    return tokens_cursor(row_range, [*held, *added], low_watermark(child), handed_until(child)), used


def cursor_rows(cursor: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Return the continuation tokens (row range and token) and watermarks a cursor holds, for pages."""
    try:
        row_range, tokens = parse_cursor(cursor)
    except ValueError as error:
        return [("cursor", str(error))]
    rows = [(f"continuation token for {label(t.row_range)}", t.token) for t in tokens]
    if not tokens:
        rows.append(("continuation token", f"none yet: {label(row_range)} is read from its start time"))
    if low_watermark(cursor) is not None:
        rows.append(("low watermark handed over by its parents", cursor[LOW_WATERMARK]))
    if delivered(cursor) is not None:
        rows.append(("newest change the tokens are past", cursor[DELIVERED]))
    return rows
