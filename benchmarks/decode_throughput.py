"""Measure rows/s of the client's default decode against cdcweb's decoders.

Both sides consume the same in-process PartialResultSet messages through the official
client's StreamedResultSet, so only the decode differs:

  client    lazy_decode=False, rows discarded (what a plain client user pays)
  cdcweb    lazy_decode=True + decode_*_value into typed records (what the reader does)

Run: .venv/bin/python benchmarks/decode_throughput.py [rows] [repeats]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from google.cloud.spanner_v1.streamed import StreamedResultSet

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# The wire builders live with the parser tests; reuse them rather than copy them.
sys.path.insert(
    0, str(Path(__file__).resolve().parents[1] / "tests" / "partitions" / "sources" / "spanner_change_stream")
)

from changestream_wire import googlesql_value, partial_result_sets, postgresql_value, random_records  # noqa: E402

from partitions.sources.spanner_change_stream.decode import GoogleSqlDecoder  # noqa: E402
from partitions.sources.spanner_change_stream.parse import (  # noqa: E402
    decode_postgresql_value,
    parse_googlesql_row,
    parse_postgresql_row,
)


def _client(messages) -> None:
    for _ in StreamedResultSet(iter(messages), lazy_decode=False):
        pass


def _client_typed(parse):
    def run(messages) -> None:
        for row in StreamedResultSet(iter(messages), lazy_decode=False):
            parse(row, "token")

    return run


def _fast(decode):
    def run(messages) -> None:
        for row in StreamedResultSet(iter(messages), lazy_decode=True):
            decode(row[0], "token")

    return run


def _rate(run, messages, rows: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run(messages)
        best = min(best, time.perf_counter() - started)
    return rows / best


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    records = random_records(rows)
    cases = {
        "googlesql": (
            [googlesql_value(r) for r in records],
            _client_typed(parse_googlesql_row),
            _fast(GoogleSqlDecoder().decode),
        ),
        "postgresql": (
            [postgresql_value(r) for r in records],
            _client_typed(parse_postgresql_row),
            _fast(decode_postgresql_value),
        ),
    }
    summary = []
    for dialect, (values, client_typed, fast) in cases.items():
        messages = partial_result_sets(values, dialect)
        a = _rate(_client, messages, rows, repeats)
        g = _rate(client_typed, messages, rows, repeats)
        b = _rate(fast, messages, rows, repeats)
        print(f"{dialect:10} client default decode   {a:>9,.0f} rows/s")
        print(f"{dialect:10} client decode + parse   {g:>9,.0f} rows/s")
        print(f"{dialect:10} lazy + cdcweb decoder   {b:>9,.0f} rows/s")
        summary.append(f"{dialect} b/a={b / a:.2f}")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
