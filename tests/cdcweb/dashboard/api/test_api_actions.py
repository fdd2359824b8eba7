"""Operator actions: start, pause, resume, recover through the state machine; 409 names the state."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from streams.models import Stream
from tests.factories.lineage import make_lineage_stream

S = Stream.State


def _in(state: str, **fields) -> Stream:
    stream = make_lineage_stream("orders", 3, **fields)
    Stream.objects.filter(pk=stream.pk).update(state=state)
    return stream


def test_start_moves_to_starting_logs_who_and_enqueues_the_start_task(operator, sent_tasks, db):
    stream = _in(S.NOT_STARTED)
    response = operator.post(f"/api/v1/streams/{stream.pk}/start/", {"reason": "go"}, format="json")
    assert response.status_code == 200
    assert response.json()["state"] == "STARTING"
    transition = operator.get(f"/api/v1/streams/{stream.pk}/transitions/").json()["results"][-1]
    assert (transition["from_state"], transition["to_state"], transition["by"]) == (
        "NOT_STARTED",
        "STARTING",
        "otto",
    )


def test_pause_drains(operator, db):
    stream = _in(S.RUNNING)
    assert operator.post(f"/api/v1/streams/{stream.pk}/pause/").json()["state"] == "DRAINING"


@pytest.mark.parametrize(
    ("state", "action"),
    [
        (S.RUNNING, "start"),
        (S.RUNNING, "resume"),
        (S.PAUSED, "pause"),
        (S.DRAINING, "resume"),
        (S.RUNNING, "recover"),
    ],
)
def test_a_forbidden_move_is_409_naming_the_current_state(operator, db, state, action):
    stream = _in(state)
    body = {"strategy": "watermark"} if action == "recover" else {}
    response = operator.post(f"/api/v1/streams/{stream.pk}/{action}/", body, format="json")
    assert response.status_code == 409
    assert response.json()["current_state"] == state
    assert f"it is {state}" in response.json()["detail"]
    stream.refresh_from_db()
    assert stream.state == state


@pytest.mark.parametrize("strategy", ["watermark", "now"])
def test_recover_restarts_a_failed_stream(operator, db, strategy):
    stream = _in(S.FAILED_PERMANENTLY)
    response = operator.post(f"/api/v1/streams/{stream.pk}/recover/", {"strategy": strategy}, format="json")
    assert response.status_code == 200
    assert response.json()["state"] == "STARTING"
    stream.refresh_from_db()
    assert (stream.resume_from is None) == (strategy == "watermark")


def test_recover_from_a_timestamp(operator, db):
    stream = _in(S.FAILED_PERMANENTLY)
    at = (timezone.now() - timedelta(hours=1)).isoformat()
    response = operator.post(
        f"/api/v1/streams/{stream.pk}/recover/", {"strategy": "timestamp", "timestamp": at}, format="json"
    )
    assert response.status_code == 200
    stream.refresh_from_db()
    assert abs((stream.resume_from - (timezone.now() - timedelta(hours=1))).total_seconds()) < 60


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "strategy"),
        ({"strategy": "yesterday"}, "strategy"),
        ({"strategy": "timestamp"}, "timestamp"),
        ({"strategy": "timestamp", "timestamp": "2026-01-01T00:00:00"}, "timestamp"),
        ({"strategy": "timestamp", "timestamp": "3000-01-01T00:00:00Z"}, "timestamp"),
        ({"strategy": "timestamp", "timestamp": "not a time"}, "timestamp"),
        ({"strategy": "now", "timestamp": "2026-01-01T00:00:00Z"}, "timestamp"),
    ],
)
def test_bad_recover_arguments_are_400_field_errors(operator, db, body, field):
    stream = _in(S.FAILED_PERMANENTLY)
    response = operator.post(f"/api/v1/streams/{stream.pk}/recover/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    stream.refresh_from_db()
    assert stream.state == S.FAILED_PERMANENTLY


def test_recover_past_the_streams_end_is_400(operator, db):
    stream = _in(S.FAILED_PERMANENTLY, end_at=timezone.now() - timedelta(days=1))
    response = operator.post(f"/api/v1/streams/{stream.pk}/recover/", {"strategy": "now"}, format="json")
    assert response.status_code == 400
    assert "ends at" in response.json()["non_field_errors"][0]


def test_an_action_on_a_missing_stream_is_404(operator, db):
    assert operator.post("/api/v1/streams/999999/pause/").status_code == 404
