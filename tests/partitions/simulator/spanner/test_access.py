"""PERMISSION_DENIED as Cloud Spanner answers it, through the official client over gRPC.

A database denied to callers without a role refuses every query (IAM: no
spanner.databases.select) while GetDatabase answers; a database role denied the change
stream reads INFORMATION_SCHEMA but not the read function (fine-grained access control).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import spanner_v1

from partitions.simulator.spanner.config import SimulatorConfig, parse_denial
from partitions.simulator.spanner.server import start_server
from partitions.sources.spanner_change_stream.query import build_query


@pytest.fixture(scope="module")
def guarded():
    """Yield a simulator denying demo-db to callers without a role, and demo-pg's change stream to reader."""
    config = SimulatorConfig(
        seed=7, retention=3600, denied=(parse_denial("demo-db"), parse_denial("demo-pg:reader"))
    )
    server = start_server(config, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.stop(0)


def database(server, name: str, role: str | None = None):
    """Return the official client's Database, created with a database role when one is given."""
    endpoint = {"api_endpoint": server.emulator_host}
    client = spanner_v1.Client(
        project="p", credentials=AnonymousCredentials(), client_options=endpoint, disable_builtin_metrics=True
    )
    return client.instance("i").database(name, database_role=role)


def change_stream_rows(db, dialect: str) -> list:
    end = datetime.now(UTC) - timedelta(seconds=1)
    query = build_query(dialect, "Changes", end - timedelta(seconds=1), end, None, 1000)
    with db.snapshot() as snapshot:
        return list(snapshot.execute_sql(query.sql, query.params, query.param_types))


def schema_rows(db) -> list:
    with db.snapshot() as snapshot:
        return list(snapshot.execute_sql("SELECT change_stream_name FROM information_schema.change_streams"))


def test_a_caller_without_select_on_the_database_is_denied_every_query_but_sees_the_database(guarded):
    db = database(guarded, "demo-db")
    # the database answers GetDatabase (spanner.databases.get is another permission)
    assert db.database_dialect.name == "GOOGLE_STANDARD_SQL"
    resource = "projects/p/instances/i/databases/demo-db"
    for query in (lambda: schema_rows(db), lambda: change_stream_rows(db, "googlesql")):
        with pytest.raises(exceptions.PermissionDenied) as denied:
            query()
        # (the client appends the request's id to the server's message)
        assert denied.value.message.startswith(
            f"Caller is missing IAM permission spanner.databases.select on resource {resource}."
        )


def test_a_role_without_execute_on_the_read_function_reads_the_schema_but_not_the_change_stream(guarded):
    reader = database(guarded, "demo-pg", role="reader")
    assert [row[0].lower() for row in schema_rows(reader)] == ["changes"]
    with pytest.raises(exceptions.PermissionDenied) as denied:
        change_stream_rows(reader, "postgresql")
    assert denied.value.message.startswith(
        "Role reader does not have required privileges on function spanner.read_json_Changes."
    )
    # and another role, or none, may read it
    assert change_stream_rows(database(guarded, "demo-pg", role="analyst"), "postgresql")
    assert change_stream_rows(database(guarded, "demo-pg"), "postgresql")


@pytest.mark.parametrize(
    ("text", "message"),
    [("Demo", "invalid database name 'Demo'"), ("demo-db:1st", "invalid database role '1st'")],
)
def test_a_bad_denial_is_a_one_line_error(text, message):
    with pytest.raises(ValueError, match=message):
        parse_denial(text)
    with pytest.raises(ValueError, match="cannot deny access to database nope: it is not served"):
        SimulatorConfig(denied=(("nope", ""),))
