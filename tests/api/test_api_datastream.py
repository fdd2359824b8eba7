"""The API of watched (Datastream) streams: import, the same actions, backfills, operations; who may."""

from __future__ import annotations

import pytest

from partitions.watch.importing import import_streams
from partitions.watch.polling import poll_watched
from streams.models import Stream, StreamOperation
from tests.factories.datastream import LOCATION, PROJECT

IMPORT = "/api/v1/streams/import-datastream/"
ROLES = {"anonymous": 401, "viewer": 403}


def test_an_operator_imports_a_location(operator, at_sim):
    answer = operator.post(IMPORT, {"project": PROJECT, "location": LOCATION}, format="json")
    assert answer.status_code == 201, answer.content
    assert len(answer.json()["created"]) == 200
    again = operator.post(IMPORT, {"project": PROJECT, "location": LOCATION, "stream_id": "stream-007"})
    assert again.json() == {"created": [], "existing": ["stream-007"]}
    listed = operator.get("/api/v1/streams/?source_kind=datastream").json()
    assert listed["count"] == 200


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"project": PROJECT, "location": "Mars"}, "location", "a region"),
        ({"project": "X", "location": LOCATION}, "project", "a project ID"),
        ({"project": PROJECT, "location": LOCATION, "stream_id": "No_Such"}, "stream_id", "a stream ID"),
        ({"location": LOCATION}, "project", "required"),
    ],
)
def test_bad_settings_are_a_400_naming_the_field(operator, at_sim, body, field, says):
    answer = operator.post(IMPORT, body, format="json")
    assert answer.status_code == 400
    assert says in str(answer.json()[field])
    assert not Stream.objects.exists()


def test_an_unknown_stream_is_a_400_in_datastreams_words(operator, at_sim):
    answer = operator.post(IMPORT, {"project": PROJECT, "location": LOCATION, "stream_id": "nope-stream"})
    assert answer.status_code == 400
    assert "NOT_FOUND" in answer.json()["detail"]
    assert "nope-stream" in answer.json()["detail"]


@pytest.mark.parametrize("role", list(ROLES))
def test_viewers_and_anonymous_cannot_import(client_as, at_sim, role):
    answer = client_as(role).post(IMPORT, {"project": PROJECT, "location": LOCATION})
    assert answer.status_code == ROLES[role]
    assert not Stream.objects.exists()


def _watched(pick, state: str) -> Stream:
    return import_streams(PROJECT, LOCATION, pick(state)).created[0]


# action -> (state, path, body)
ACTIONS = {
    "pause": ("RUNNING", "pause/", {}),
    "resume": ("PAUSED", "resume/", {}),
    "start": ("NOT_STARTED", "start/", {}),
    "recover": ("FAILED_PERMANENTLY", "recover/", {"strategy": "now"}),
    "backfill": ("RUNNING", "backfill/", {"object": "orders", "action": "start"}),
}


@pytest.mark.parametrize("action", list(ACTIONS))
def test_an_operators_action_is_sent_to_datastream_and_listed(operator, at_sim, pick, action):
    state, path, body = ACTIONS[action]
    stream = _watched(pick, state)
    answer = operator.post(f"/api/v1/streams/{stream.pk}/{path}", body, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["state"] == state  # Datastream moves it; the poll records the move
    listed = operator.get(f"/api/v1/streams/{stream.pk}/operations/").json()["results"]
    assert [(o["status"], o["by"]) for o in listed] == [("PENDING", "otto")]


@pytest.mark.parametrize("role", list(ROLES))
@pytest.mark.parametrize("action", list(ACTIONS))
def test_viewers_cannot_act_on_a_watched_stream(client_as, at_sim, pick, role, action):
    state, path, body = ACTIONS[action]
    stream = _watched(pick, "RUNNING")
    answer = client_as(role).post(f"/api/v1/streams/{stream.pk}/{path}", body, format="json")
    assert answer.status_code == ROLES[role]
    assert not StreamOperation.objects.exists()


def test_viewers_read_the_operations(client_as, at_sim, pick):
    stream = _watched(pick, "RUNNING")
    assert client_as("viewer").get(f"/api/v1/streams/{stream.pk}/operations/").status_code == 200


def test_a_second_action_while_one_runs_is_a_409(operator, at_sim, pick):
    stream = _watched(pick, "RUNNING")
    operator.post(f"/api/v1/streams/{stream.pk}/pause/")
    answer = operator.post(f"/api/v1/streams/{stream.pk}/pause/")
    assert answer.status_code == 409
    assert "still running" in answer.json()["detail"]


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("recover/", {"strategy": "timestamp", "timestamp": "2020-01-01T00:00:00Z"}, "not from a timestamp"),
        ("backfill/", {"object": "a/b", "action": "start"}, "by its ID"),
    ],
)
def test_bad_action_arguments_are_a_400(operator, at_sim, pick, path, body, says):
    stream = _watched(pick, "FAILED_PERMANENTLY")
    answer = operator.post(f"/api/v1/streams/{stream.pk}/{path}", body, format="json")
    assert answer.status_code == 400
    assert says in str(answer.json())


def test_recover_from_a_given_position_is_sent_with_it(operator, at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("FAILED_PERMANENTLY", "oracle")).created[0]
    body = {"strategy": "position", "position": {"oracle_scn_position": {"scn": 2_000_000}}}
    answer = operator.post(f"/api/v1/streams/{stream.pk}/recover/", body, format="json")
    assert answer.status_code == 200, answer.content
    operation = stream.operations.get()
    assert operation.arguments == {"start": "specific", "position": body["position"]}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"strategy": "position"}, "strategy 'position' needs a position"),
        ({"strategy": "now", "position": "oracle:5"}, "only used with strategy 'position'"),
        ({"strategy": "position", "position": "oracle:five"}, "an Oracle position is oracle:SCN"),
        ({"strategy": "position", "position": [1, 2]}, "exactly one of"),
        (
            {"strategy": "position", "position": {"mysql_log_position": {"log_file": 5, "log_position": 1}}},
            "bad argument",
        ),
    ],
)
def test_a_bad_position_is_a_400_that_says_why(operator, at_sim, body, says):
    failed = at_sim.steady_streams("FAILED_PERMANENTLY", 60.0)[0].rsplit("/", 1)[-1]
    stream = import_streams(PROJECT, LOCATION, failed).created[0]
    answer = operator.post(f"/api/v1/streams/{stream.pk}/recover/", body, format="json")
    assert answer.status_code == 400, answer.content
    assert says in str(answer.json())
    assert not stream.operations.exists()


def test_a_read_stream_has_no_position_to_recover_from(operator, stream):
    Stream.objects.filter(pk=stream.pk).update(state="FAILED_PERMANENTLY")
    body = {"strategy": "position", "position": "oracle:5"}
    answer = operator.post(f"/api/v1/streams/{stream.pk}/recover/", body, format="json")
    assert answer.status_code == 400
    assert "read by cdcweb" in str(answer.json())


def test_a_read_stream_has_no_backfill(operator, stream):
    answer = operator.post(f"/api/v1/streams/{stream.pk}/backfill/", {"object": "x", "action": "start"})
    assert answer.status_code == 400
    assert "read by cdcweb" in str(answer.json())


def test_errors_carry_datastreams_uuid_and_details(operator, at_sim, pick):
    stream = _watched(pick, "FAILED_PERMANENTLY")
    errors = operator.get(f"/api/v1/streams/{stream.pk}/errors/").json()["results"]
    assert len(errors) == 2
    assert all(e["uuid"] and isinstance(e["details"], dict) for e in errors)


def test_deleting_a_watched_stream_stops_watching_it_in_any_state(operator, at_sim, pick):
    # given a running watched stream, polled once
    stream = _watched(pick, "RUNNING")
    poll_watched()
    # when it is deleted, with no word about data (cdcweb landed none)
    answer = operator.delete(f"/api/v1/streams/{stream.pk}/")
    # then it is gone, beat polls it no more, and Datastream was not asked to change it
    assert answer.status_code == 204, answer.content
    mark = at_sim.mark()
    assert poll_watched().streams == 0
    assert at_sim.requests(since=mark) == []
    assert (
        at_sim.world.streams[f"{at_sim.config.parent}/streams/{stream.name}"].moment(at_sim.clock.now()).state
        == "RUNNING"
    )
