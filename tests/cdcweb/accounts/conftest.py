"""Fixtures of the accounts tests: the API tests' PostgreSQL switch (users come from tests/conftest.py)."""

from tests.factories.api import django_db_setup  # noqa: F401 - PostgreSQL when CDC_TEST_DATABASE_URL is set
