"""Checks of a stream's settings against the source itself, run before the stream exists.

Pure Python, no Django. A kind's ``checks(values, start)`` returns ``Check``s in the
order they make sense (the database answers before its change stream is looked up);
``run_checks`` runs each in a thread of its own with a deadline, so a source that does
not answer gives a failed check naming the wait, never a hang. A check that others
need (``needed``) and fails makes the later ones fail at once, saying which failed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

# Each check gets this long: a source that answers at all answers a metadata query
# in well under a second; the whole list of a kind stays under half a minute.
CHECK_TIMEOUT_S = 5.0


class CheckFailed(Exception):
    """A check's finding that the stream would fail: the message says why, in the operator's terms."""


@dataclass(frozen=True)
class Check:
    """One thing to ask the source: its name, the setting it is about ("" for none) and how to ask.

    ``run`` returns what it found (the detail shown when it passes) or raises CheckFailed.
    """

    name: str
    setting: str
    run: Callable[[], str]
    needed: bool = False  # later checks are pointless when this one fails


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check, as the API, the CLI and the page show it."""

    check: str
    ok: bool
    detail: str
    setting: str = ""

    def as_dict(self) -> dict[str, Any]:
        """Return the result as the API's JSON object."""
        return {"check": self.check, "ok": self.ok, "detail": self.detail, "setting": self.setting}


def run_checks(checks: Iterable[Check], timeout: float = CHECK_TIMEOUT_S) -> list[CheckResult]:
    """Run every check in order, each within `timeout` seconds; return their results."""
    results: list[CheckResult] = []
    blocked = ""
    for check in checks:
        if blocked:
            results.append(CheckResult(check.name, False, f"not checked: {blocked} failed", check.setting))
            continue
        result = run_one(check, timeout)
        results.append(result)
        if check.needed and not result.ok:
            blocked = check.name
    return results


def run_one(check: Check, timeout: float = CHECK_TIMEOUT_S) -> CheckResult:
    """Run one check in a daemon thread; a failure, an error or no answer in time is a failed result."""
    outcome: list[tuple[bool, str]] = []

    def target() -> None:
        try:
            outcome.append((True, check.run()))
        except CheckFailed as failed:
            outcome.append((False, str(failed)))
        except Exception as error:  # noqa: BLE001 - any error of the source is the check's finding
            outcome.append((False, f"{type(error).__name__}: {error}"[:500]))

    # A daemon thread: a client call stuck past the deadline cannot keep the process alive.
    thread = threading.Thread(target=target, name=f"check-{check.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        return CheckResult(
            check.name, False, f"the source did not answer within {timeout:g} s", check.setting
        )
    ok, detail = outcome[0]
    return CheckResult(check.name, ok, detail, check.setting)
