"""Fixtures of the retention tests: a Datastream simulator whose errors a poll stores."""

from tests.factories.datastream import at_sim, ds_watch_sim, pick  # noqa: F401 - watched streams
