"""Injected faults, drawn from a generator keyed by the seed and where a call starts.

A key says where a call starts (and, where a simulator needs it, how often it started
there), so a test that fails can be replayed, and a resumed stream moves on instead of
meeting the same fault for ever. Each simulator adds the kinds only it knows.
"""

from __future__ import annotations

import asyncio
import random
import time

from .config import ChangeStreamConfig


class Faults:
    """The faults one streaming call meets: slow messages, and a stream that breaks (UNAVAILABLE)."""

    def __init__(self, config: ChangeStreamConfig, key: str):
        self._rng = random.Random(f"{config.seed}:faults:{key}")
        self.unavailable = config.fault("unavailable")
        self.slow_s = config.fault("slow") / 1000

    def before_message(self) -> None:
        """Sleep as a slow stream would."""
        if self.slow_s:
            time.sleep(self.slow_s)

    async def before_message_async(self) -> None:
        """Sleep as a slow stream would, on an event loop (a coroutine handler's)."""
        if self.slow_s:
            await asyncio.sleep(self.slow_s)

    def broken(self) -> bool:
        """Return whether the stream breaks (UNAVAILABLE) after the message just sent."""
        return self.draw(self.unavailable)

    def draw(self, chance: float) -> bool:
        """Return True with the given chance (no draw, False, when it is 0)."""
        return bool(chance) and self._rng.random() < chance
