"""Edits the pipeline could not honour are refused with the numbers; a change never undoes a transition."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Max
from django.test.utils import CaptureQueriesContext

from cdcweb.dashboard.api import serializers
from cdcweb.dashboard.forms import stream_form
from cdcweb.dashboard.kinds import clean_settings
from partitions.models import Partition
from streams.models import Stream
from streams.times import format_time
from tests.factories.api import stream_body


def test_a_heartbeat_that_does_not_fit_three_times_in_the_lease_is_refused_with_the_numbers(operator, db):
    # given the default 60 s lease, when a stream with a 300 s heartbeat is created
    response = operator.post("/api/v1/streams/", stream_body(heartbeat_ms=300_000), format="json")
    # then it is refused, saying the heartbeat, the lease and what would fit
    assert response.status_code == 400
    message = response.json()["heartbeat_ms"][0]
    assert "300,000 ms" in message
    assert "60 s lease (CDC_LEASE_SECONDS)" in message
    assert "at most 20,000 ms" in message
    assert "at least 900 s" in message
    assert not Stream.objects.exists()


def test_a_heartbeat_that_fits_a_longer_lease_is_accepted(operator, db, settings):
    settings.CDC_LEASE_SECONDS = 900
    response = operator.post("/api/v1/streams/", stream_body(heartbeat_ms=300_000), format="json")
    assert response.status_code == 201, response.json()


def test_a_heartbeat_raised_past_the_lease_by_a_change_is_refused(operator, stream):
    response = operator.patch(f"/api/v1/streams/{stream.pk}/", {"heartbeat_ms": 30_000}, format="json")
    assert response.status_code == 400
    assert "30,000 ms does not fit 3 times in the 60 s lease" in response.json()["heartbeat_ms"][0]


def _highest(stream):
    return Partition.objects.filter(stream=stream).aggregate(high=Max("watermark"))["high"]


def test_an_end_before_the_highest_watermark_is_a_400_naming_it(operator, stream):
    # given a stream whose partitions were read up to their watermarks
    highest = _highest(stream)
    # when its end is moved before the highest of them
    early = highest - timedelta(minutes=1)
    response = operator.patch(f"/api/v1/streams/{stream.pk}/", {"end_at": format_time(early)}, format="json")
    # then it is refused, naming the watermark, and nothing changed
    assert response.status_code == 400
    message = response.json()["end_at"][0]
    assert f"is at {format_time(highest)}" in message
    stream.refresh_from_db()
    assert stream.end_at is None
    # and an end at or after it is taken
    late = format_time(highest + timedelta(minutes=1))
    assert operator.patch(f"/api/v1/streams/{stream.pk}/", {"end_at": late}, format="json").status_code == 200


def test_a_change_saves_only_its_fields_and_never_writes_back_a_state(operator, stream, monkeypatch):
    # given a stream DRAINING, that a transition moves to PAUSED while a change is being validated
    Stream.objects.filter(pk=stream.pk).update(state=Stream.State.DRAINING)
    validate = serializers.StreamSerializer.validate

    def racing(self, attrs):
        Stream.objects.filter(pk=stream.pk).update(state=Stream.State.PAUSED, state_reason="drained")
        return validate(self, attrs)

    monkeypatch.setattr(serializers.StreamSerializer, "validate", racing)
    # when the change of its window is saved
    with CaptureQueriesContext(connection) as queries:
        response = operator.patch(f"/api/v1/streams/{stream.pk}/", {"window_seconds": 30}, format="json")
    # then the window changed and the transition's state and reason stayed
    assert response.status_code == 200, response.json()
    stream.refresh_from_db()
    assert (stream.window_seconds, stream.state, stream.state_reason) == (30, "PAUSED", "drained")
    updates = [
        q["sql"] for q in queries if q["sql"].startswith('UPDATE "streams_stream"') and "window" in q["sql"]
    ]
    assert len(updates) == 1
    assert '"state"' not in updates[0]
    # and the stream's row was locked before it was read for the change (where the database locks rows)
    if connection.features.has_select_for_update:
        assert any("FOR NO KEY UPDATE" in q["sql"] for q in queries)


@pytest.mark.parametrize("method", ["put", "patch"])
def test_a_change_of_nothing_writes_nothing(operator, stream, method):
    # given a stream whose settings are stored as the kind cleans them (as the API stores them)
    Stream.objects.filter(pk=stream.pk).update(
        connection=clean_settings(stream.source_kind, stream.connection)
    )
    body = operator.get(f"/api/v1/streams/{stream.pk}/").json() if method == "put" else {}
    if method == "put":
        body = {
            k: v
            for k, v in body.items()
            if v is not None
            and k
            in serializers.COMMON_FIELDS
            + ("project", "instance", "database", "change_stream", "dialect", "emulator_host")
        }
        body.pop("state", None)
    with CaptureQueriesContext(connection) as queries:
        response = getattr(operator, method)(f"/api/v1/streams/{stream.pk}/", body, format="json")
    assert response.status_code == 200, response.json()
    assert not [q for q in queries if q["sql"].startswith('UPDATE "streams_stream"')]


def test_the_stream_form_refuses_an_end_before_the_highest_watermark(stream):
    # given the stream's form (the admin's and the pages'), with an end before what was read
    highest = _highest(stream)
    data = {
        "name": stream.name, "heartbeat_ms": stream.heartbeat_ms, "window_seconds": stream.window_seconds,
        "start_at": format_time(stream.start_at), "end_at": format_time(highest - timedelta(seconds=1)),
        **{k: v for k, v in stream.connection.items() if v is not None},
    }  # fmt: skip
    form = stream_form(stream.source_kind)(data, instance=stream)
    # then the end is the field in error, naming the watermark
    assert not form.is_valid()
    assert f"is at {format_time(highest)}" in form.errors["end_at"][0]
