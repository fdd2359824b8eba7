"""Fixtures of the stream API tests: the PostgreSQL switch and fakes of the tasks the actions send.

Users, token clients and the stream come from tests/conftest.py.
"""

from tests.factories.api import django_db_setup, sent_tasks  # noqa: F401 - PostgreSQL in CI; no real tasks
from tests.factories.datastream import at_sim, ds_watch_sim, pick  # noqa: F401 - watched streams
