"""A stream's scripted life: every state in turn, and the errors each episode carries.

Before its start time a stream is NOT_STARTED. From then on it repeats one cycle of
segments, each a state held for a share of the cycle (jittered per stream by its seed).
The last segment is FAILED_PERMANENTLY; the next cycle begins with STARTING as if an
operator had recovered the stream, so every cycle after the first has a recovery time.
An error belongs to an episode (stream, cycle, kind): it appears when its first segment
begins, keeps its UUID while it lasts and clears when the stream leaves it.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass

from .catalog import SimError, stream_error

# (state, share of the cycle, error kinds present). "log" spans the FAILED segment and the
# FAILED_PERMANENTLY one after it: the same error, still there, plus the permanent one.
SEGMENTS = (
    ("STARTING", 0.03, ()),
    ("RUNNING", 0.28, ()),
    ("FAILED", 0.05, ("connect",)),
    ("RUNNING", 0.14, ()),
    ("DRAINING", 0.03, ()),
    ("PAUSED", 0.09, ()),
    ("STARTING", 0.03, ()),
    ("RUNNING", 0.14, ()),
    ("MAINTENANCE", 0.04, ()),
    ("RUNNING", 0.07, ()),
    ("FAILED", 0.04, ("log",)),
    ("FAILED_PERMANENTLY", 0.06, ("log", "lost")),
)


@dataclass(frozen=True)
class Moment:
    """What a stream's script says at one instant."""

    state: str
    since: float  # when this state began (the stream's update time)
    errors: tuple[SimError, ...]
    recovered_at: float | None  # the start of the current cycle, if a recovery began it


class Timeline:
    """The scripted states of one stream, from its start time on."""

    def __init__(self, name: str, source: str, start_at: float, created_at: float, cycle: float, rng):
        """Jitter the segments' shares by the stream's seed and lay them out over one cycle."""
        self.name, self.source = name, source
        self.start_at, self.created_at = start_at, created_at
        shares = [share * rng.uniform(0.7, 1.3) for _, share, _ in SEGMENTS]
        scale = cycle / sum(shares)
        self.durations = [share * scale for share in shares]
        self.offsets = [sum(self.durations[:i]) for i in range(len(SEGMENTS))]
        self.length = sum(self.durations)
        self._first_offset = {}
        for offset, (_, _, kinds) in zip(self.offsets, SEGMENTS, strict=True):
            for kind in kinds:
                self._first_offset.setdefault(kind, offset)
        self._log_seq = random.Random(f"{name}:log").randint(100, 9000)

    def at(self, t: float) -> Moment:
        """Return the scripted state, its start and the open errors at unix time t."""
        if t < self.start_at:
            return Moment("NOT_STARTED", self.created_at, (), None)
        cycle, position = divmod(t - self.start_at, self.length)
        cycle = int(cycle)
        index = bisect.bisect_right(self.offsets, position) - 1
        state, _, kinds = SEGMENTS[index]
        cycle_start = self.start_at + cycle * self.length
        errors = tuple(self._error(kind, cycle, cycle_start) for kind in kinds)
        recovered = cycle_start if cycle > 0 else None
        return Moment(state, cycle_start + self.offsets[index], errors, recovered)

    def _error(self, kind: str, cycle: int, cycle_start: float) -> SimError:
        """Return the error of one kind in one cycle, timed when its first segment began."""
        at = cycle_start + self._first_offset[kind]
        return stream_error(kind, self.source, (self.name, cycle), at, self._log_seq + cycle)

    def segment_starts(self, start: float, end: float) -> list[float]:
        """Return every instant in [start, end) where the script changes state (tests step by these)."""
        times = [self.start_at] if start <= self.start_at < end else []
        first = max(0, int((start - self.start_at) // self.length))
        cycle = first
        while self.start_at + cycle * self.length < end:
            base = self.start_at + cycle * self.length
            times.extend(base + off for off in self.offsets if start <= base + off < end)
            cycle += 1
        return sorted(set(times))
