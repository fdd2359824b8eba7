"""How far a read has delivered each part of its row range; the continuation tokens encode it.

Commit timestamps are unique microseconds in the simulator, so a position is one
number: every change of the piece committed at or before it has been delivered. A read
resumed from tokens collected from several parents may start with pieces at different
positions; a token then lists every piece, so a resumed read neither skips nor repeats
a change. Token text: ``bt1.`` then ``lo-hi@position`` per piece (hex keys), joined by ``;``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

_PREFIX = "bt1."


class Progress:
    """Contiguous pieces [lo, hi) of the integer key space, each with its position (µs)."""

    __slots__ = ("pieces", "_los")

    def __init__(self, pieces: Iterable[tuple[int, int, int]]):
        ordered = sorted(pieces)
        if not ordered:
            raise ValueError("no continuation tokens")
        for (_, hi, _), (lo, _, _) in zip(ordered, ordered[1:], strict=False):
            if hi != lo:
                raise ValueError("the continuation tokens leave a gap or overlap")
        self.pieces = _normalised(ordered)
        self._los = [lo for lo, _, _ in self.pieces]

    @classmethod
    def at(cls, lo: int, hi: int, position: int) -> Progress:
        """Return the progress of a range delivered up to one position."""
        return cls([(lo, hi, position)])

    @classmethod
    def decode(cls, token: str) -> Progress:
        """Return the progress a token stands for; ValueError if it is not one of this simulator."""
        if not token.startswith(_PREFIX):
            raise ValueError("not a continuation token of this simulator")
        try:
            pieces = []
            for part in token[len(_PREFIX) :].split(";"):
                bounds, _, position = part.partition("@")
                lo, _, hi = bounds.partition("-")
                pieces.append((int(lo, 16), int(hi, 16), int(position)))
        except ValueError:
            raise ValueError("not a continuation token of this simulator") from None
        return cls(pieces)

    @classmethod
    def combine(cls, progresses: Iterable[Progress]) -> Progress:
        """Return the progress of several tokens together (a merge's); ValueError on gaps or overlaps."""
        return cls(piece for p in progresses for piece in p.pieces)

    def encode(self) -> str:
        """Return the continuation token of this progress."""
        return _PREFIX + ";".join(f"{lo:x}-{hi:x}@{position}" for lo, hi, position in self.pieces)

    @property
    def bounds(self) -> tuple[int, int]:
        """Return [lo, hi) of the whole range."""
        return self.pieces[0][0], self.pieces[-1][1]

    def low(self) -> int:
        """Return the lowest position: every change at or before it has been delivered."""
        return min(position for _, _, position in self.pieces)

    def high(self) -> int:
        """Return the highest position: the partition a read serves is the one live just after it."""
        return max(position for _, _, position in self.pieces)

    def position_of(self, key: int) -> int:
        """Return the position of the piece holding the key."""
        if len(self.pieces) == 1:
            return self.pieces[0][2]
        return self.pieces[bisect_right(self._los, key) - 1][2]

    def advance(self, position: int) -> None:
        """Record that every change up to the position has been delivered, in every piece."""
        if len(self.pieces) == 1:
            lo, hi, held = self.pieces[0]
            if position > held:
                self.pieces[0] = (lo, hi, position)
            return
        self.pieces = _normalised([(lo, hi, max(held, position)) for lo, hi, held in self.pieces])
        self._los = [lo for lo, _, _ in self.pieces]

    def restrict(self, lo: int, hi: int) -> Progress:
        """Return the progress of the sub-range [lo, hi)."""
        return Progress((max(a, lo), min(b, hi), p) for a, b, p in self.pieces if max(a, lo) < min(b, hi))


def _normalised(pieces: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Join neighbouring pieces at the same position, so a token stays short."""
    joined = [pieces[0]]
    for lo, hi, position in pieces[1:]:
        last_lo, _, last_position = joined[-1]
        if position == last_position:
            joined[-1] = (last_lo, hi, position)
        else:
            joined.append((lo, hi, position))
    return joined
