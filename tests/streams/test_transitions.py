"""The stream state machine: every allowed move logs once, every other move is refused."""

from __future__ import annotations

import itertools

import pytest
from django.db import transaction

from streams.models import Stream, StreamTransition
from streams.transitions import ALLOWED_MOVES, TransitionNotAllowed, transition

STATES = Stream.State.values
ALL_MOVES = list(itertools.product(STATES, STATES))
FORBIDDEN = [move for move in ALL_MOVES if move not in ALLOWED_MOVES]


def test_table_has_datastreams_moves():
    S = Stream.State
    for move in [
        (S.NOT_STARTED, S.STARTING),
        (S.STARTING, S.RUNNING),
        (S.RUNNING, S.DRAINING),
        (S.DRAINING, S.PAUSED),
        (S.PAUSED, S.STARTING),
        (S.RUNNING, S.FAILED),
        (S.FAILED, S.RUNNING),
        (S.FAILED, S.FAILED_PERMANENTLY),
        (S.FAILED_PERMANENTLY, S.STARTING),
        (S.STARTING, S.DRAINING),
    ]:
        assert move in ALLOWED_MOVES
    # the one move to the same state: recover a start that cannot succeed
    assert {(src, dst): label for (src, dst), label in ALLOWED_MOVES.items() if src == dst} == {
        (S.STARTING, S.STARTING): "recover"
    }


@pytest.mark.django_db
@pytest.mark.parametrize(("current", "to"), list(ALLOWED_MOVES))
def test_allowed_move_changes_state_and_writes_one_transition(make_stream, current, to):
    stream = make_stream(state=current)
    result = transition(stream, to, by="tester", reason="because")
    stored = Stream.objects.get(pk=stream.pk)
    assert (result.state, stored.state, stream.state) == (to, to, to)
    assert stored.state_reason == "because"
    log = list(StreamTransition.objects.filter(stream=stream))
    assert [(t.from_state, t.to_state, t.by, t.reason) for t in log] == [(current, to, "tester", "because")]
    assert log[0].at == stored.state_changed_at


@pytest.mark.django_db
@pytest.mark.parametrize(("current", "to"), FORBIDDEN)
def test_forbidden_move_is_refused_and_changes_nothing(make_stream, current, to):
    stream = make_stream(state=current)
    before = Stream.objects.values().get(pk=stream.pk)
    with pytest.raises(TransitionNotAllowed) as refused:
        transition(stream, to, by="tester", reason="try")
    message = str(refused.value)
    assert f"stream 'orders' from {current} to {to}" in message
    assert Stream.objects.values().get(pk=stream.pk) == before
    assert not StreamTransition.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("current", "action", "to", "expected"),
    [
        (
            "RUNNING",
            "resume",
            "STARTING",
            "cannot resume stream 'orders': it is RUNNING (resume is allowed from PAUSED)",
        ),
        (
            "PAUSED",
            "start",
            "STARTING",
            "cannot start stream 'orders': it is PAUSED (start is allowed from NOT_STARTED)",
        ),
        (
            "FAILED",
            "recover",
            "STARTING",
            "it is FAILED (recover is allowed from FAILED_PERMANENTLY, STARTING)",
        ),
        ("PAUSED", "pause", "DRAINING", "it is PAUSED (pause is allowed from FAILED, RUNNING, STARTING)"),
    ],
)
def test_action_refusal_names_current_state_and_where_it_is_allowed(
    make_stream, current, action, to, expected
):
    stream = make_stream(state=current)
    with pytest.raises(TransitionNotAllowed, match=expected.replace("(", r"\(").replace(")", r"\)")):
        transition(stream, to, by="tester", action=action)
    assert Stream.objects.get(pk=stream.pk).state == current


@pytest.mark.django_db
def test_transition_and_its_log_row_roll_back_together(make_stream):
    stream = make_stream(state="RUNNING")

    def move_then_fail():
        with transaction.atomic():
            transition(stream, "DRAINING", by="tester")
            raise RuntimeError("the caller fails after the move")

    with pytest.raises(RuntimeError):
        move_then_fail()
    assert Stream.objects.get(pk=stream.pk).state == "RUNNING"
    assert not StreamTransition.objects.exists()


@pytest.mark.django_db
def test_failed_log_write_leaves_state_unchanged(make_stream, monkeypatch):
    stream = make_stream(state="RUNNING")

    def broken(**kwargs):
        raise RuntimeError("log table unavailable")

    monkeypatch.setattr(StreamTransition.objects, "create", broken)
    with pytest.raises(RuntimeError):
        transition(stream, "DRAINING", by="tester")
    assert Stream.objects.get(pk=stream.pk).state == "RUNNING"


@pytest.mark.django_db
def test_stale_instance_cannot_repeat_a_move(make_stream):
    # given two copies of the same stream, as two concurrent requests would hold
    first = make_stream(state="PAUSED")
    second = Stream.objects.get(pk=first.pk)
    transition(first, "STARTING", by="a", action="resume")
    # when the second copy, still saying PAUSED, tries the same move
    with pytest.raises(TransitionNotAllowed, match="it is STARTING"):
        transition(second, "STARTING", by="b", action="resume")
    # then only one move was logged
    assert StreamTransition.objects.count() == 1


@pytest.mark.django_db
def test_extra_fields_are_saved_with_the_move(make_stream):
    stream = make_stream(state="FAILED")
    transition(stream, "RUNNING", by="retry", consecutive_failures=0)
    assert Stream.objects.get(pk=stream.pk).consecutive_failures == 0
