"""A watched (Datastream) stream's page: the source's state and details, its operations with their
progress, the source's warnings, and the buttons Datastream accepts now."""

from __future__ import annotations

import pytest
from django.urls import reverse

from partitions.models import WatchedStream
from partitions.watch.importing import import_streams
from partitions.watch.operating import run_operation
from partitions.watch.polling import poll_watched
from streams.models import Stream
from tests.factories.datastream import LOCATION, PROJECT

pytestmark = pytest.mark.django_db


def _page(client, stream) -> str:
    return client.get(reverse("stream-detail", args=[stream.pk])).content.decode()


def test_the_page_shows_what_datastream_says(client, users, at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    poll_watched()
    client.force_login(users["operator"])
    html = _page(client, stream)
    assert 'id="source-state">RUNNING' in html
    assert "Last recovery" in html
    assert 'data-open-dialog="dlg-pause"' in html
    assert 'data-open-dialog="dlg-resume" disabled' in html


def test_a_pause_from_the_page_shows_its_progress_then_the_paused_stream(client, users, at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    client.force_login(users["operator"])
    answer = client.post(reverse("stream-action", args=[stream.pk, "pause"]), follow=True)
    assert "Pause sent to Datastream" in answer.content.decode()
    assert 'data-status="PENDING"' in _page(client, stream)
    run_operation(stream.operations.get())
    html = _page(client, stream)
    assert 'data-status="DONE"' in html
    assert 'id="source-state">PAUSED' in html
    assert Stream.objects.get(pk=stream.pk).state == "PAUSED"


def test_a_refusal_shows_in_datastreams_words(client, users, at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("PAUSED")).created[0]
    client.force_login(users["operator"])
    client.post(reverse("stream-action", args=[stream.pk, "pause"]))
    run_operation(stream.operations.get())
    html = _page(client, stream)
    assert 'data-status="REFUSED"' in html
    assert "already paused" in html


def test_maintenance_unsupported_events_and_retention_are_warned(client, users, at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("PAUSED")).created[0]
    poll_watched()
    WatchedStream.objects.filter(stream=stream).update(maintenance=True, unsupported_events=12)
    Stream.objects.filter(pk=stream.pk).update(connection={**stream.connection, "log_retention_hours": 1})
    Stream.objects.filter(pk=stream.pk).update(state_changed_at=stream.state_changed_at.replace(year=2020))
    client.force_login(users["viewer"])
    html = _page(client, stream)
    assert "MAINTENANCE: Google is maintaining this stream" in html
    assert "12 unsupported events" in html
    assert "of the source&#x27;s 1 h log retention" in html
    assert "data-open-dialog" not in html


def test_an_operator_starts_an_objects_backfill_from_the_page(client, users, at_sim, pick):
    # given a running watched stream whose objects beat has read
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    poll_watched(objects=True)
    client.force_login(users["operator"])
    html = _page(client, stream)
    assert 'id="backfill-form"' in html
    object_id = stream.partitions.order_by("label").first().token
    # when they start its backfill, then the operation is sent and listed
    answer = client.post(
        reverse("stream-backfill", args=[stream.pk]), {"object": object_id, "what": "start"}, follow=True
    )
    assert f"Backfill start of {object_id} sent to Datastream" in answer.content.decode()
    operation = stream.operations.get()
    assert (operation.action, operation.target) == ("start_backfill", object_id)


def test_a_bad_backfill_request_is_a_message_and_viewers_cannot_ask(client, users, at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    client.force_login(users["viewer"])
    assert "backfill-form" not in _page(client, stream)
    assert (
        client.post(
            reverse("stream-backfill", args=[stream.pk]), {"object": "x", "what": "start"}
        ).status_code
        == 403
    )
    client.force_login(users["operator"])
    answer = client.post(
        reverse("stream-backfill", args=[stream.pk]), {"object": "x", "what": "explode"}, follow=True
    )
    assert "&#x27;start&#x27; or &#x27;stop&#x27;" in answer.content.decode()
    assert not stream.operations.exists()


def test_a_metric_cloud_monitoring_does_not_describe_is_a_warning(client, users, without_freshness):
    running = without_freshness.steady_streams("RUNNING", 60.0)[0].rsplit("/", 1)[-1]
    stream = import_streams(PROJECT, LOCATION, running).created[0]
    poll_watched()
    client.force_login(users["viewer"])
    html = _page(client, stream)
    assert "Cloud Monitoring has no descriptor of datastream.googleapis.com/stream/freshness" in html
    assert "the lag (data freshness) is not charted" in html


def test_an_operator_recovers_from_a_given_position_from_the_page(client, users, at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("FAILED_PERMANENTLY", "mysql")).created[0]
    poll_watched()
    client.force_login(users["operator"])
    assert 'name="position"' in _page(client, stream)
    form = {"strategy": "position", "position": "mysql:mysql-bin.000123:4"}
    answer = client.post(reverse("stream-action", args=[stream.pk, "recover"]), form, follow=True)
    assert "Recover sent to Datastream" in answer.content.decode()
    operation = run_operation(stream.operations.get())
    assert operation.arguments["start"] == "specific"
    assert operation.status == "DONE", operation.message


def test_a_bad_position_on_the_page_is_a_message(client, users, at_sim):
    failed = at_sim.steady_streams("FAILED_PERMANENTLY", 60.0)[0].rsplit("/", 1)[-1]
    stream = import_streams(PROJECT, LOCATION, failed).created[0]
    client.force_login(users["operator"])
    form = {"strategy": "position", "position": "mysql:no-offset"}
    answer = client.post(reverse("stream-action", args=[stream.pk, "recover"]), form, follow=True)
    assert "a MySQL position is mysql:FILE:POSITION" in answer.content.decode()
    assert not stream.operations.exists()


def test_the_lineage_card_speaks_of_objects_and_their_backfills(client, users, at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    poll_watched(objects=True)
    client.force_login(users["viewer"])
    html = _page(client, stream)
    assert "Objects and their backfills" in html
    assert "one object of the Datastream stream" in html
    assert "splits and merges" not in html
    assert "fixed partitions" not in html
    assert "Low-watermark lag" not in html
    # and an object's page shows its backfill
    partition = stream.partitions.order_by("token").first()
    detail = client.get(reverse("partition-detail", args=[partition.pk])).content.decode()
    assert "Backfill" in detail
    assert partition.cursor["backfill_state"] in detail
