"""The API of watched (Datastream) streams: import, the same actions, backfills, operations; who may."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from partitions.watch.importing import import_streams
from partitions.watch.operating import run_operation
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
    "recover from a position": (
        "FAILED_PERMANENTLY",
        "recover/",
        {"strategy": "position", "position": "mysql:mysql-bin.000123:4"},
    ),
    "backfill": ("RUNNING", "backfill/", {"object": "orders", "action": "start"}),
}


@pytest.mark.parametrize("action", list(ACTIONS))
def test_an_operators_action_is_accepted_as_an_operation_to_follow(operator, at_sim, pick, action):
    # given a watched stream in a state Datastream takes the action in
    state, path, body = ACTIONS[action]
    stream = _watched(pick, state)
    # when an operator asks for the action
    answer = operator.post(f"/api/v1/streams/{stream.pk}/{path}", body, format="json")
    # then it is accepted: the operation, where to follow it, and the stream as it is now
    assert answer.status_code == 202, answer.content
    accepted = answer.json()
    operation = stream.operations.get()
    assert (accepted["id"], accepted["status"], accepted["by"]) == (operation.pk, "PENDING", "otto")
    assert accepted["action"] == operation.action
    assert answer["Location"] == accepted["url"] == f"/api/v1/streams/{stream.pk}/operations/{operation.pk}/"
    assert accepted["stream"]["id"] == stream.pk
    assert accepted["stream"]["state"] == state  # Datastream moves it; the poll records the move
    # and its url shows it to the end
    followed = operator.get(accepted["url"])
    assert followed.status_code == 200
    assert followed.json()["id"] == operation.pk


def test_the_operations_url_shows_its_progress_and_end(operator, at_sim, pick):
    stream = _watched(pick, "RUNNING")
    url = operator.post(f"/api/v1/streams/{stream.pk}/pause/").json()["url"]
    run_operation(stream.operations.get())
    cache.clear()  # answers are cached for a second (streams/api/cache.py)
    done = operator.get(url).json()
    assert done["status"] == "DONE"
    assert done["finished_at"] is not None
    assert "PAUSED" in done["message"]
    assert done["elapsed_seconds"] > 0


@pytest.mark.parametrize("role", ["viewer", "anonymous"])
def test_viewers_read_an_operation_and_anonymous_do_not(client_as, operator, at_sim, pick, role):
    stream = _watched(pick, "RUNNING")
    url = operator.post(f"/api/v1/streams/{stream.pk}/pause/").json()["url"]
    assert client_as(role).get(url).status_code == {"viewer": 200, "anonymous": 401}[role]


def test_an_operation_of_another_stream_is_a_404(operator, at_sim, pick):
    stream, other = _watched(pick, "RUNNING"), _watched(pick, "RUNNING")
    operation = operator.post(f"/api/v1/streams/{stream.pk}/pause/").json()["id"]
    assert operator.get(f"/api/v1/streams/{other.pk}/operations/{operation}/").status_code == 404


def test_a_read_streams_action_still_answers_the_stream(operator, stream):
    answer = operator.post(f"/api/v1/streams/{stream.pk}/pause/")
    assert answer.status_code == 200
    assert answer.json()["state"] == "DRAINING"


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
    assert answer.status_code == 202, answer.content
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
    assert all(e["last_seen_at"] is not None for e in errors)  # Datastream still reports them


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
