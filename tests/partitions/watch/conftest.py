"""Fixtures: the Datastream simulator and the clients pointed at it (tests/factories/datastream.py)."""

from tests.factories.datastream import at_sim, ds_watch_sim, pick, travel, without_freshness  # noqa: F401
