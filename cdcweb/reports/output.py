"""Read what a report job says (progress, outcome, errors) and the result tables it writes."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

LIST_PRICE = "list price, verify for your contract"
# Rows of one table kept in the database; the full table stays in the output directory
# (for the CSV export). 20k rows of ~10 fields is about 2 MB of JSON.
MAX_STORED_ROWS = 20_000
ERROR_LINES = 3
ERROR_LINE_CHARS = 400

_PROGRESS = re.compile(r"^PROGRESS (\d+)/(\d+) (\S+) ?(.*)$")
# Lines that never explain a failure: JVM stack frames, Python traceback scaffolding,
# log4j chatter, py4j's plumbing.
_NOISE = (
    re.compile(r"^\s+at \S+\(.*\)$"),
    re.compile(r"^\s*\.\.\. \d+ more$"),
    re.compile(r"^Traceback \(most recent call last\):$"),
    re.compile(r'^\s+File ".*", line \d+'),
    re.compile(r"^\s{4,}\S"),
    re.compile(r"^\s*\^[\^~]*$"),
    re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (INFO|WARN|DEBUG|TRACE) "),
    re.compile(r"py4j", re.IGNORECASE),
    re.compile(r"^(Using Spark's default log4j|Setting default log level|To adjust logging level)"),
    re.compile(r"^(JVM stacktrace|Driver stacktrace):?$"),
)
_EXCEPTION = re.compile(r"([A-Za-z_][\w.$]*(Error|Exception)|^error)(: |:$)")


@dataclass(frozen=True)
class Event:
    """One line of the job's stdout: progress, done (with the summary path) or error."""

    kind: str  # "progress", "done", "error"
    done: int = 0
    total: int = 0
    step: str = ""
    text: str = ""


def parse_line(line: str) -> Event | None:
    """Return the event a stdout line carries, or None for any other line."""
    line = line.rstrip("\n")
    match = _PROGRESS.match(line)
    if match:
        return Event("progress", int(match[1]), int(match[2]), match[4].strip()[:200])
    if line.startswith("DONE "):
        return Event("done", text=line[5:].strip())
    if line.startswith("ERROR "):
        return Event("error", text=line[6:].strip())
    return None


def readable_error(lines: list[str], status: int | None = None) -> str:
    """Return the first meaningful lines of a failed job's output, without stack traces or noise."""
    # py4j prefixes the Java exception with ": "; strip it with the whitespace.
    kept = [ln.strip(" \t:") for ln in lines if ln.strip() and not any(p.search(ln) for p in _NOISE)]
    exceptions = [ln for ln in kept if _EXCEPTION.search(ln)]
    chosen = []
    for line in exceptions or kept:
        short = line[:ERROR_LINE_CHARS]
        if short not in chosen:
            chosen.append(short)
        if len(chosen) == ERROR_LINES:
            break
    if chosen:
        return "\n".join(chosen)
    return f"spark-submit exited with status {status}" if status is not None else "the job failed"


def with_notes(assumptions: list[dict]) -> list[dict]:
    """Return the assumptions, each saying it is a list price to verify, as the report prints them."""
    return [{**a, "note": a.get("note") or LIST_PRICE} for a in assumptions]


def load_results(summary_path: Path) -> tuple[dict, dict, list[dict]]:
    """Return (summary, results, assumptions) of a finished job: tables as lists of row objects."""
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    results = {}
    for name, table in summary.get("tables", {}).items():
        data = json.loads((summary_path.parent / table["file"]).read_text(encoding="utf-8"))
        columns = data["columns"]
        results[name] = [dict(zip(columns, row, strict=True)) for row in data["rows"][:MAX_STORED_ROWS]]
        table["columns"] = columns
        table["stored_rows"] = len(results[name])
    return summary, results, with_notes(summary.get("assumptions", []))


def table_columns_rows(report, name: str) -> tuple[list[str], list[list]] | None:
    """Return one result table's columns and rows: the full file if kept, else the stored rows."""
    if name not in (report.results or {}):
        return None
    path = Path(report.output_dir) / f"{name}.json" if report.output_dir else None
    if path is not None and path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        return data["columns"], data["rows"]
    columns = (report.summary.get("tables", {}).get(name) or {}).get("columns")
    rows = report.results[name]
    columns = columns or (list(rows[0]) if rows else [])
    return columns, [[row.get(c) for c in columns] for row in rows]


def to_csv(columns: list[str], rows: list[list]) -> str:
    """Return a table as CSV text with a header row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    writer.writerows(rows)
    return buffer.getvalue()
