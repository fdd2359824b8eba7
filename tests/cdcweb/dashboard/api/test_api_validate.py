"""POST /api/v1/streams/validate/: a create's body checked against the simulator, nothing created."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from streams.models import Stream
from tests.factories.api import stream_body

URL = "/api/v1/streams/validate/"


@pytest.fixture
def body(simulator) -> dict:
    """Return a create's body naming the simulator's change stream, starting now."""
    found = stream_body(database="demo-db", change_stream="Changes", emulator_host=simulator.emulator_host)
    found.pop("start_at")
    return found


def test_a_body_that_would_work_passes_every_check_and_creates_nothing(operator, body):
    answer = operator.post(URL, body, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["ok"] is True
    assert [c["check"] for c in answer.json()["checks"]] == [
        "database answers", "dialect", "change stream exists", "start inside retention",
        "change stream query allowed",
    ]  # fmt: skip
    assert not Stream.objects.exists()


def test_a_wrong_stream_name_and_an_old_start_fail_beside_their_settings(operator, body):
    old = (datetime.now(UTC) - timedelta(days=2)).isoformat()
    answer = operator.post(URL, {**body, "change_stream": "Orders", "start_at": old}, format="json")
    assert answer.status_code == 200
    assert answer.json()["ok"] is False
    failed = {c["setting"]: c["detail"] for c in answer.json()["checks"] if not c["ok"]}
    assert failed["change_stream"] == "change stream Orders does not exist (there are: Changes)"
    assert "start_at" in failed


def test_a_bad_setting_is_a_400_with_field_errors_as_a_create_gives(operator, body):
    answer = operator.post(URL, {**body, "change_stream": "no such; name"}, format="json")
    assert answer.status_code == 400
    assert "change_stream" in answer.json()


def test_a_kind_of_its_own_gets_its_own_checks(operator, simulator):
    body = {
        "name": "events", "source_kind": "spanner_commit_timestamp", "project": "p", "instance": "i",
        "database": "demo-db", "table": "Events", "timestamp_column": "Quantity",
        "key_columns": ["TenantId", "EventId"], "emulator_host": simulator.emulator_host,
    }  # fmt: skip
    answer = operator.post(URL, body, format="json")
    assert answer.status_code == 200, answer.content
    failed = [(c["check"], c["detail"]) for c in answer.json()["checks"] if not c["ok"]]
    assert failed[0] == ("commit timestamp column", "column Quantity is INT64, not a TIMESTAMP")
    assert [name for name, _ in failed] == ["commit timestamp column", "poll query uses the index"]


@pytest.mark.parametrize(("role", "status"), [("anonymous", 401), ("viewer", 403)])
def test_only_operators_may_validate(client_as, body, role, status):
    assert client_as(role).post(URL, body, format="json").status_code == status
