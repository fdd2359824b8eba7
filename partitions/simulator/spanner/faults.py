"""The faults of one Spanner call: the shared ones (core/faults.py) plus INTERNAL and malformed records.

The key is the query and its position, so the same query resumed at the same position
meets the same faults (a test that fails can be replayed), and a resumed stream moves on.
"""

from __future__ import annotations

import grpc

from partitions.simulator.core.faults import Faults

from .config import SimulatorConfig


class StreamFaults(Faults):
    """The faults one ExecuteStreamingSql call meets."""

    def __init__(self, config: SimulatorConfig, key: str):
        super().__init__(config, key)
        self.internal = config.fault("internal")
        self.malformed = config.fault("malformed")
        self.active = any((self.unavailable, self.internal, self.malformed, self.slow_s))

    def after_message(self) -> tuple[grpc.StatusCode, str] | None:
        """Return the status to end the stream with after a message, or None to go on."""
        if self.broken():
            return grpc.StatusCode.UNAVAILABLE, "simulated fault: the server closed the stream, resume it"
        if self.draw(self.internal):
            return grpc.StatusCode.INTERNAL, "simulated fault: internal error"
        return None

    def corrupt(self) -> bool:
        """Return whether the next data record is sent malformed."""
        return self.draw(self.malformed)
