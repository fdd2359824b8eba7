"""Print every data change record of a Spanner change stream as JSON lines."""

from __future__ import annotations

import json
import os
import sys

from django.core.management.base import BaseCommand, CommandError

from partitions.sources.base import SourceError
from partitions.sources.spanner_change_stream.errors import QueryValidationError
from partitions.sources.spanner_change_stream.follow import PartitionFollower
from partitions.sources.spanner_change_stream.jsonl import record_to_json
from partitions.sources.spanner_change_stream.query import (
    DIALECTS,
    build_query,
    validate_heartbeat,
    validate_stream_name,
)
from partitions.sources.spanner_change_stream.reader import ChangeStreamReader, connect, detect_dialect
from streams.times import parse_time


def _fail(message: str) -> CommandError:
    return CommandError(message, returncode=2)


class Command(BaseCommand):
    # A debugging tool that needs no database: skip the system checks for a fast start.
    requires_system_checks = []
    help = (
        "Read a change stream from START (to END, or live), following every partition through "
        "splits and merges, and print each data change record as one JSON line on stdout; a "
        "summary goes to stderr. Without --emulator-host or SPANNER_EMULATOR_HOST it reads real "
        "Spanner with the environment's credentials."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--instance", required=True)
        parser.add_argument("--database", required=True)
        parser.add_argument("--stream", required=True, help="change stream name")
        parser.add_argument("--start", required=True, help="ISO 8601 with a zone, 'now' or '-10m'")
        parser.add_argument("--end", help="ISO 8601, 'now' or '+5m'; omit to follow live")
        parser.add_argument("--heartbeat-ms", type=int, default=10_000)
        parser.add_argument("--dialect", choices=DIALECTS, help="default: read from the database")
        parser.add_argument("--emulator-host", help="host:port of the simulator or emulator")
        parser.add_argument("--parallelism", type=int, default=16, help="partitions read at once")

    def handle(self, *args, **options):
        start, end = self._window(options)
        try:
            validate_stream_name(options["stream"])
            validate_heartbeat(options["heartbeat_ms"])
            host = options["emulator_host"] or os.environ.get("SPANNER_EMULATOR_HOST") or None
            database = connect(options["project"], options["instance"], options["database"], host)
            dialect = options["dialect"] or detect_dialect(database)
            # Validate the whole query before anything is sent.
            build_query(dialect, options["stream"], start, end, None, options["heartbeat_ms"])
            reader = ChangeStreamReader(database, options["stream"], dialect, options["heartbeat_ms"])
            follower = PartitionFollower(
                reader, start, end, self._print_record, parallelism=options["parallelism"]
            )
            summary = follower.run()
        except QueryValidationError as exc:
            raise _fail(str(exc)) from None
        except SourceError as exc:
            raise _fail(f"reading change stream {options['stream']!r} failed: {exc}") from None
        except KeyboardInterrupt:
            return
        finally:
            sys.stdout.flush()
        self.stderr.write(
            f"partitions={summary.partitions} splits={summary.splits} merges={summary.merges} "
            f"data_records={summary.data_records} heartbeats={summary.heartbeats} "
            f"retries={summary.retries} seconds={summary.seconds:.2f}"
        )

    def _window(self, options):
        try:
            start = parse_time(options["start"])
            end = parse_time(options["end"]) if options["end"] else None
        except ValueError as exc:
            raise _fail(str(exc)) from None
        if end is not None and end < start:
            raise _fail(f"--end {end.isoformat()} is before --start {start.isoformat()}")
        return start, end

    def _print_record(self, record, partition_token: str) -> None:
        sys.stdout.write(json.dumps(record_to_json(record, partition_token), separators=(",", ":")))
        sys.stdout.write("\n")
