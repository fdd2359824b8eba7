"""Validate a stream before it exists: the kind's checks of its settings, asked of the source.

The API (``POST /api/v1/streams/validate/``), ``cdc_stream validate`` and the "New
stream" page all call ``validate``: the settings are cleaned as a create cleans them
(a bad value is refused before anything is asked), then each of the kind's checks runs
against the source with a deadline (partitions/sources/checks.py). Nothing is created.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from partitions.sources import KINDS
from partitions.sources.checks import CHECK_TIMEOUT_S, CheckResult, run_checks


def validate(
    kind_name: str, connection: dict[str, Any], start: datetime | None, timeout: float = CHECK_TIMEOUT_S
) -> list[CheckResult]:
    """Return the results of the kind's checks of cleaned settings, from `start` (None: now)."""
    return run_checks(KINDS[kind_name].checks(connection, start), timeout)


def as_body(results: list[CheckResult]) -> dict[str, Any]:
    """Return the API's answer: ok when every check passed, and each check's result."""
    return {"ok": all(r.ok for r in results), "checks": [r.as_dict() for r in results]}
