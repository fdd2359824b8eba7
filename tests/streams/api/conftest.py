"""Fixtures of the API's cache and permission tests: the PostgreSQL switch, fakes of the tasks sent.

Users, token clients and the stream come from tests/conftest.py. This `sent_tasks` (the
pipeline's task module faked) replaces tests/streams/conftest.py's recorder of dispatch.send here.
"""

from tests.factories.api import django_db_setup, sent_tasks  # noqa: F401 - PostgreSQL in CI; no real tasks
