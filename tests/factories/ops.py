"""Fixtures of the operations tests: the same PostgreSQL switch as the API tests, a fresh /healthz.

The tests of cdcweb's root modules (tests/cdcweb/test_*.py) import them one module at a
time: a conftest.py in tests/cdcweb/ would apply them to every app's tests below it too.
"""

import pytest

from tests.factories.api import django_db_setup  # noqa: F401 - PostgreSQL when CDC_TEST_DATABASE_URL is set


@pytest.fixture(autouse=True)
def _fresh_health():
    """Start every test without a remembered /healthz answer."""
    from cdcweb import ops

    ops.HEALTH.clear()
    yield
    ops.HEALTH.clear()
