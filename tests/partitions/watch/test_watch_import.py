"""Importing Datastream streams: every stream of a location, or one, each watched once."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from partitions.models import WatchedStream
from partitions.sources.base import PermanentSourceError, SettingsError
from partitions.watch.importing import import_streams
from streams.models import Stream, StreamError
from tests.factories.datastream import LOCATION, PROJECT

pytestmark = pytest.mark.django_db


def test_import_watches_every_stream_of_a_location_in_its_state(at_sim):
    # given the streams that stay in their state for the next minute
    steady = {
        name.rsplit("/", 1)[-1]: state
        for state in ("NOT_STARTED", "RUNNING", "PAUSED", "FAILED", "FAILED_PERMANENTLY")
        for name in at_sim.steady_streams(state, 60.0)
    }
    # when a location of 200 streams is imported
    done = import_streams(PROJECT, LOCATION)
    # then each is a Datastream stream named by its ID, in the state Datastream reports
    assert len(done.created) == 200
    assert not done.existing
    streams = {s.name: s for s in Stream.objects.filter(source_kind="datastream")}
    assert set(streams) == {f"stream-{i:03d}" for i in range(200)}
    assert len(steady) > 100
    for name, state in steady.items():
        assert streams[name].state == state, name
    # and what only the source knows is kept beside it
    watched = WatchedStream.objects.get(stream=streams["stream-000"])
    assert watched.source_state
    assert watched.source_type
    assert watched.destination_type


def test_a_failed_streams_errors_are_stored_with_uuid_reason_and_details(at_sim, pick):
    import_streams(PROJECT, LOCATION, pick("FAILED_PERMANENTLY"))
    errors = list(StreamError.objects.all())
    assert len(errors) == 2
    assert all(e.uuid and e.code and e.message and e.kind == "permanent" for e in errors)
    assert "Stream failed permanently" in {e.code for e in errors}


def test_importing_again_adds_nothing(at_sim, pick):
    stream_id = pick("RUNNING")
    import_streams(PROJECT, LOCATION, stream_id)
    again = import_streams(PROJECT, LOCATION, stream_id)
    assert not again.created
    assert [s.name for s in again.existing] == [stream_id]
    assert Stream.objects.count() == 1


def test_a_name_taken_by_another_stream_gets_the_location_in_it(at_sim, pick, make_stream):
    stream_id = pick("RUNNING")
    make_stream(name=stream_id)
    done = import_streams(PROJECT, LOCATION, stream_id)
    assert done.created[0].name == f"{PROJECT}.{LOCATION}.{stream_id}"


def test_an_unknown_stream_is_refused_in_datastreams_words(at_sim):
    with pytest.raises(PermanentSourceError, match="NOT_FOUND"):
        import_streams(PROJECT, LOCATION, "no-such-stream")
    assert not Stream.objects.exists()


def test_a_bad_location_is_refused_before_anything_is_sent(at_sim):
    mark = at_sim.mark()
    with pytest.raises(SettingsError) as refused:
        import_streams(PROJECT, "Not A Region")
    assert "location" in refused.value.errors
    assert at_sim.requests(since=mark) == []


def test_the_cli_imports_and_says_what(at_sim, pick, capsys):
    stream_id = pick("PAUSED")
    call_command(
        "cdc_stream", "import-datastream", "--project", PROJECT, "--location", LOCATION, "--stream", stream_id
    )
    out = capsys.readouterr().out
    assert f"watching stream '{stream_id}' (PAUSED)" in out
    assert "1 imported, 0 already watched" in out


def test_the_cli_refuses_a_bad_project_in_one_line(at_sim):
    with pytest.raises(CommandError, match="--project: must be a project ID") as refused:
        call_command("cdc_stream", "import-datastream", "--project", "X", "--location", LOCATION)
    assert "\n" not in str(refused.value)
