"""What every Spanner kind checks before a stream exists: the database answers in the dialect given.

Pure Python, no Django. A ``SpannerProbe`` asks the database through the official client
(GetDatabase for the dialect, INFORMATION_SCHEMA queries, a query's plan), each call with
a deadline; a client error becomes a CheckFailed whose message is Spanner's own, with
its status name. Names are compared as the dialect resolves them (GoogleSQL ignores case).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from google.cloud.spanner_v1 import ExecuteSqlRequest, param_types

from partitions.sources.base import SourceError
from partitions.sources.checks import CHECK_TIMEOUT_S, Check, CheckFailed
from partitions.sources.spanner_change_stream.query import GOOGLESQL
from partitions.sources.spanner_change_stream.reader import classify, connect, detect_dialect
from partitions.sources.spanner_retry import unavailable_retry

# A check waits for an unavailable server no longer than for a slow one.
RETRY = unavailable_retry(CHECK_TIMEOUT_S)


class SpannerProbe:
    """One database the settings name, asked once per question; the dialect detected once."""

    def __init__(self, values: dict[str, Any]):
        self.values = values
        self._database = None
        self._dialect = ""

    @property
    def database(self):
        """Return the client's Database, made on first use: a missing credential fails a check."""
        if self._database is None:
            v = self.values
            self._database = connect(
                v["project"], v["instance"], v["database"], v.get("emulator_host") or None
            )
        return self._database

    @property
    def dialect(self) -> str:
        """Return the database's own dialect (asked of it the first time)."""
        if not self._dialect:
            self._dialect = _asked(lambda: detect_dialect(self.database))
        return self._dialect

    def same(self, declared: str, given: str) -> bool:
        """Return whether `given` names the schema object `declared` (GoogleSQL ignores case)."""
        return declared.lower() == given.lower() if self.dialect == GOOGLESQL else declared == given

    def schema(self, view: str, columns: tuple[str, ...], **where: str) -> list[list[str]]:
        """Return the rows of an INFORMATION_SCHEMA view's columns, filtered by equal values."""
        google = self.dialect == GOOGLESQL
        name = (lambda n: n.upper()) if google else (lambda n: n.lower())
        params, conditions = {}, []
        for i, (column, value) in enumerate(where.items()):
            key = f"p{i + 1}"
            params[key] = value
            conditions.append(f"{name(column)} = {'@' + key if google else '$' + str(i + 1)}")
        sql = f"SELECT {', '.join(name(c) for c in columns)} FROM {name('information_schema')}.{name(view)}"
        if conditions:
            sql += " WHERE " + " AND ".join(conditions)
        types = dict.fromkeys(params, param_types.STRING)
        return _asked(lambda: self._rows(sql, params, types))

    def _rows(self, sql: str, params: dict, types: dict) -> list[list[str]]:
        with self.database.snapshot() as snapshot:
            return [
                list(row)
                for row in snapshot.execute_sql(sql, params, types, timeout=CHECK_TIMEOUT_S, retry=RETRY)
            ]

    def plan_scans(self, sql: str, params: dict, types: dict) -> list[tuple[str, str]]:
        """Return (scan type, scan target) of every scan in the query's plan (PLAN mode: nothing is read)."""

        def plan() -> list[tuple[str, str]]:
            with self.database.snapshot() as snapshot:
                result = snapshot.execute_sql(
                    sql,
                    params,
                    types,
                    query_mode=ExecuteSqlRequest.QueryMode.PLAN,
                    timeout=CHECK_TIMEOUT_S,
                    retry=RETRY,
                )
                list(result)
                nodes = result.stats.query_plan.plan_nodes if result.stats else []
            scans = []
            for node in nodes:
                meta = dict(node.metadata or {})
                if "scan_target" in meta:
                    scans.append((str(meta.get("scan_type", "")), str(meta["scan_target"])))
            return scans

        return _asked(plan)


def _asked(call):
    """Return what a client call returns; its failure becomes CheckFailed with Spanner's message."""
    try:
        return call()
    except SourceError as error:
        raise CheckFailed(reason(error)) from error
    except Exception as error:  # noqa: BLE001 - the client's and transport's errors, classified
        raise CheckFailed(reason(classify(error))) from error


def reason(error: SourceError) -> str:
    """Return a source error's message, led by its status name once."""
    message, code = str(error), error.code or ""
    return message if not code or message.startswith(code) else f"{code}: {message}"


def database_checks(probe: SpannerProbe) -> list[Check]:
    """Return the checks every Spanner kind starts with: the database answers, in the dialect given."""
    values = probe.values
    where = f"{values['project']}/{values['instance']}/{values['database']}"

    def answers() -> str:
        return f"database {where} answers; its dialect is {probe.dialect}"

    def dialect() -> str:
        given = values.get("dialect") or ""
        if not given:
            return f"not set: {probe.dialect}, as the database says"
        if given != probe.dialect:
            raise CheckFailed(
                f"the database uses {probe.dialect}, not {given}: set the dialect to {probe.dialect}"
            )
        return f"{given}, as the database says"

    return [Check("database answers", "database", answers, needed=True), Check("dialect", "dialect", dialect)]


def find_name(probe: SpannerProbe, names: list[str], given: str, what: str, where: str = "") -> str:
    """Return the declared name among `names` that `given` refers to; CheckFailed listing the others."""
    for name in names:
        if probe.same(name, given):
            return name
    there = ", ".join(sorted(names)[:10]) or "none"
    raise CheckFailed(f"{what} {given} does not exist{where} (there are: {there})")


def parse_duration(text: str) -> timedelta:
    """Return a retention_period such as '36h', '7d', '1440m' or '86400s' as a timedelta."""
    units = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
    text = text.strip().lower()
    if len(text) < 2 or text[-1] not in units or not text[:-1].isdigit():
        raise CheckFailed(f"retention_period {text!r} is not a duration this check reads")
    return timedelta(**{units[text[-1]]: int(text[:-1])})
