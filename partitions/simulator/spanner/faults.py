"""Injected faults, drawn from a generator keyed by the seed, the query and its position.

The same query resumed at the same position meets the same faults, so a test that
fails can be replayed; a resumed stream moves on, so it never loops on one fault.
"""

from __future__ import annotations

import random
import time

import grpc

from .config import SimulatorConfig


class StreamFaults:
    """The faults one ExecuteStreamingSql call meets."""

    def __init__(self, config: SimulatorConfig, key: str):
        self._rng = random.Random(f"{config.seed}:faults:{key}")
        self.unavailable = config.fault("unavailable")
        self.internal = config.fault("internal")
        self.malformed = config.fault("malformed")
        self.slow_s = config.fault("slow") / 1000
        self.active = any((self.unavailable, self.internal, self.malformed, self.slow_s))

    def before_message(self) -> None:
        """Sleep as a slow stream would."""
        if self.slow_s:
            time.sleep(self.slow_s)

    def after_message(self) -> tuple[grpc.StatusCode, str] | None:
        """Return the status to end the stream with after a message, or None to go on."""
        if self.unavailable and self._rng.random() < self.unavailable:
            return grpc.StatusCode.UNAVAILABLE, "simulated fault: the server closed the stream, resume it"
        if self.internal and self._rng.random() < self.internal:
            return grpc.StatusCode.INTERNAL, "simulated fault: internal error"
        return None

    def corrupt(self) -> bool:
        """Return whether the next data record is sent malformed."""
        return bool(self.malformed) and self._rng.random() < self.malformed
