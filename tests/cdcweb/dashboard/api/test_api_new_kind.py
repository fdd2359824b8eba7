"""A kind is registered once: a new one is taken by create, the pages, the API schema and the CLI
with no other change; a kind that cannot run is refused by every path and never sits in STARTING."""

from __future__ import annotations

import io

import pytest
import yaml
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from partitions.pipeline import failures, starting
from partitions.sources import KINDS, register
from streams import actions
from streams.models import Stream, StreamError
from streams.transitions import TransitionNotAllowed
from tests.factories import make_stream
from tests.partitions.sources.throwaway.kind import KIND as THROWAWAY

S = Stream.State


@pytest.fixture
def throwaway(monkeypatch):
    """Register the throwaway kind for one test (KINDS is restored afterwards)."""
    monkeypatch.setattr("partitions.sources.KINDS", KINDS)  # the same dict, restored below
    register(THROWAWAY)  # the one line a new kind needs
    yield THROWAWAY
    KINDS.pop(THROWAWAY.name)


@pytest.fixture
def unavailable(monkeypatch):
    """Make the Spanner change stream kind unavailable for one test, with a reason."""
    kind = KINDS["spanner_change_stream"]
    monkeypatch.setattr(kind, "unavailable", "this kind is switched off for the test", raising=False)
    return kind


def test_the_api_creates_a_stream_of_a_new_kind_and_lists_it(operator, throwaway):
    body = {"name": "files", "source_kind": "throwaway_files", "bucket": "my-bucket", "prefixes": ["a", "b"]}
    created = operator.post("/api/v1/streams/", body, format="json")
    assert created.status_code == 201, created.content
    stream = Stream.objects.get(name="files")
    assert (stream.source_kind, stream.connection) == (
        "throwaway_files",
        {"bucket": "my-bucket", "prefixes": ["a", "b"]},
    )
    assert operator.get(f"/api/v1/streams/{stream.pk}/").json()["bucket"] == "my-bucket"
    refused = operator.post(
        "/api/v1/streams/", {**body, "name": "bad", "bucket": "Bad_Bucket"}, format="json"
    )
    assert refused.status_code == 400
    assert "lowercase" in refused.json()["bucket"][0]


def test_the_api_schema_describes_the_new_kind(operator, throwaway):
    schema = yaml.safe_load(operator.get("/api/schema/").content)
    component = schema["components"]["schemas"]["ThrowawayFilesStream"]
    assert {"bucket", "prefixes"} <= set(component["properties"])
    assert schema["components"]["schemas"]["AnyStream"]["discriminator"]["mapping"]["throwaway_files"]


def test_the_cli_creates_a_stream_of_the_new_kind(db, throwaway):
    out = io.StringIO()
    call_command("cdc_stream", "create", "files", "--kind", "throwaway_files", "--bucket", "logs", stdout=out)
    assert Stream.objects.get(name="files").connection == {"bucket": "logs", "prefixes": []}


def test_the_pages_and_the_admin_show_the_new_kind(db, client, throwaway):
    admin = User.objects.create_superuser("root", password="pw")
    client.force_login(admin)
    form = client.get("/admin/streams/stream/add/?source_kind=throwaway_files").content.decode()
    assert "Throwaway files settings" in form
    stream = make_stream(
        "files", source_kind="throwaway_files", connection={"bucket": "logs", "prefixes": []}
    )
    page = client.get(f"/streams/{stream.pk}/").content.decode()
    assert "gs://logs (0 prefixes)" in page
    assert "Throwaway files" in client.get("/").content.decode()


def test_an_unavailable_kind_is_refused_by_the_api_and_every_action(operator, unavailable):
    body = {"name": "orders", "project": "p", "instance": "i", "database": "d", "change_stream": "Orders"}
    response = operator.post("/api/v1/streams/", body, format="json")
    assert response.status_code == 400
    assert "switched off" in str(response.json())
    # a row made some other way (the ORM, a fixture) cannot be started, resumed or recovered either
    stream = make_stream("orders")
    for act in (actions.start,):
        with pytest.raises(TransitionNotAllowed, match="switched off"):
            act(stream, by="test")
    Stream.objects.filter(pk=stream.pk).update(state=S.PAUSED)
    stream.refresh_from_db()
    with pytest.raises(TransitionNotAllowed, match="switched off"):
        actions.resume(stream, by="test")
    Stream.objects.filter(pk=stream.pk).update(state=S.FAILED_PERMANENTLY)
    stream.refresh_from_db()
    with pytest.raises(TransitionNotAllowed, match="switched off"):
        actions.recover(stream, "watermark", by="test")
    assert operator.post(f"/api/v1/streams/{stream.pk}/recover/", {"strategy": "now"}).status_code == 409


def test_the_cli_refuses_to_start_an_unavailable_kind(db, unavailable):
    make_stream("orders")
    with pytest.raises(CommandError, match="switched off"):
        call_command("cdc_stream", "start", "orders")
    assert Stream.objects.get(name="orders").state == S.NOT_STARTED


@pytest.mark.parametrize("state", [S.STARTING, S.RUNNING, S.FAILED, S.DRAINING])
def test_a_row_of_an_unavailable_kind_shows_failed_permanently_with_the_reason(db, unavailable, state):
    # given a stream put in a reading state behind the state machine's back
    stream = make_stream("orders", state=state)
    # when the scheduler passes (or, for STARTING, the start task runs)
    if state == S.STARTING:
        starting.start_stream(stream, queue=None)
    else:
        assert failures.stop_if_refused(stream)
    # then it is stopped, saying why
    stream.refresh_from_db()
    assert stream.state == S.FAILED_PERMANENTLY
    assert "switched off" in stream.state_reason
    assert "switched off" in StreamError.objects.get(stream=stream).message
