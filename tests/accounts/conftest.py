"""Fixtures of the accounts tests: the API tests' PostgreSQL switch and users in each role."""

from tests.api.conftest import fast_passwords, users  # noqa: F401 - the same users as the API tests
from tests.api.support import django_db_setup  # noqa: F401 - PostgreSQL when CDC_TEST_DATABASE_URL is set
