"""Fixtures of the operations tests: the same PostgreSQL switch as the API tests."""

from tests.api.support import django_db_setup  # noqa: F401 - PostgreSQL when CDC_TEST_DATABASE_URL is set
