"""wait_for: the tests' one polling helper returns as soon as its check holds, or fails saying why."""

from __future__ import annotations

import time

import pytest

from tests.factories import wait_for


def test_it_returns_the_checks_first_truthy_value_without_waiting_out_the_timeout():
    # given a check that holds from its third call on
    calls = []

    def check():
        calls.append(1)
        return len(calls) >= 3 and "ready"

    # when it is waited for with a long timeout
    began = time.monotonic()
    value = wait_for("the third call", check, timeout=30, every=0.01)
    # then the check's value comes back after three calls, long before the timeout
    assert value == "ready"
    assert len(calls) == 3
    assert time.monotonic() - began < 10


def test_a_passed_deadline_fails_naming_what_was_awaited_and_what_was_seen():
    # given a check that never holds
    seen = iter(range(1000))
    # when the deadline passes
    with pytest.raises(pytest.fail.Exception) as failed:
        wait_for("the stream to run", lambda: next(seen) < 0 and None, timeout=0.2, every=0.05,
                 detail=lambda: "state: STARTING")  # fmt: skip
    # then the failure names what it waited for, how long, the last check's value and the detail
    message = str(failed.value)
    assert "timed out after 0.2s waiting for the stream to run" in message
    assert "last check gave False" in message
    assert message.endswith("state: STARTING")


def test_the_check_runs_once_more_after_the_deadline_before_failing():
    # given a check that holds only once the deadline has passed
    deadline = time.monotonic() + 0.3
    # when it is waited for with that deadline and a poll interval longer than it
    value = wait_for("the deadline", lambda: time.monotonic() >= deadline, timeout=0.3, every=0.5)
    # then the last look after the deadline still sees it
    assert value is True
