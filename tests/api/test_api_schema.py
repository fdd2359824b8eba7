"""The OpenAPI schema holds: schemathesis fuzzes every operation as an operator, no 5xx, bodies conform."""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis import checks

from benchmarks.api_data import make_stream
from cdcweb.wsgi import application

# Kept small so the whole schema runs in well under a minute on a loaded 2-core machine.
MAX_EXAMPLES = 5


# Loaded once at collection, in-process through WSGI (the schema view needs no database).
schema = schemathesis.openapi.from_wsgi("/api/schema/", application)


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    """Stop the WSGI handler closing the connection after each request, as Django's test client does.

    Otherwise, on PostgreSQL, the first request closes the connection that holds the
    test's transaction and every later query fails.
    """
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def operator_token(users) -> str:
    """Return the operator's API token, with a stream of partitions to find (id 1 is likely hit)."""
    make_stream("orders", 12, lag_days=1 / 24)
    return Token.objects.get_or_create(user=users["operator"])[0].key


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_every_operation_conforms_to_the_schema(db, case, operator_token):
    case.call_and_validate(
        headers={"Authorization": f"Token {operator_token}"},
        checks=[
            checks.not_a_server_error,
            checks.response_schema_conformance,
            checks.content_type_conformance,
        ],
    )


def test_the_docs_page_loads_its_code_from_our_static_files(client):
    page = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in page
    assert "cdn" not in page.lower()
    assert "unpkg" not in page.lower()
    assert client.get("/api/schema/", HTTP_ACCEPT="application/json").status_code == 200
