"""Run the local Spanner simulator, or print its ground truth for a window (a change stream or a table)."""

from __future__ import annotations

import json
import signal
import sys
import threading

from django.core.management.base import BaseCommand, CommandError

from partitions.simulator.core.config import parse_duration, parse_timestamp
from partitions.simulator.spanner.config import SimulatorConfig, parse_database, parse_fault
from partitions.simulator.spanner.groundtruth import ground_truth_lines
from partitions.simulator.spanner.server import start_server
from partitions.simulator.spanner.table_reads import table_ground_truth


def _add_table_arguments(parser) -> None:
    """Add the options of the commit-timestamp tables' workload."""
    parser.add_argument(
        "--table-rate",
        type=float,
        default=20.0,
        help="row versions written per second in each commit-timestamp table (default 20)",
    )
    parser.add_argument(
        "--shards", type=int, default=19, help="shard values 0..N-1 of the sharded table (default 19)"
    )
    parser.add_argument(
        "--table-update-after",
        default="60s",
        help="time between two writes of one key, whole seconds (default 60s)",
    )


class Command(BaseCommand):
    """Serve the simulator, or print a window's ground truth."""

    # The simulator needs no database: skip the system checks for a fast start.
    requires_system_checks = []
    help = (
        "Serve a deterministic Spanner change stream over the real gRPC API (point the client at it "
        "with SPANNER_EMULATOR_HOST=HOST:PORT). Defaults: seed 1, databases demo-db (GoogleSQL) and "
        "demo-pg (PostgreSQL), stream Changes, 4 root partitions, a split and a merge every 60 s, "
        "20 transactions/s, 1 day of retention. Every database also serves tables with a commit timestamp "
        "column (Events and ShardedEvents; events and sharded_events in PostgreSQL). With --ground-truth "
        "--database D --start T1 --end T2 print every data change record a correct reader of [T1, T2] "
        "must deliver, as JSON lines; add --table T for the row versions a correct poller of T must deliver."
    )

    def add_arguments(self, parser):
        """Declare the options (see --help)."""
        parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=9010, help="port to listen on (default 9010)")
        parser.add_argument("--seed", type=int, default=1, help="seed of everything served (default 1)")
        parser.add_argument(
            "--database",
            action="append",
            metavar="NAME[:DIALECT]",
            help="database to serve, dialect googlesql (default) or postgresql; repeatable "
            "(default: demo-db:googlesql and demo-pg:postgresql)",
        )
        parser.add_argument("--stream", default="Changes", help="change stream name (default Changes)")
        parser.add_argument("--roots", type=int, default=4, help="partitions at the epoch (default 4)")
        parser.add_argument("--split-every", default="60s", help="time between splits (default 60s)")
        parser.add_argument("--merge-every", default="60s", help="time between merges (default 60s)")
        parser.add_argument("--tps", type=float, default=20.0, help="transactions per second (default 20)")
        parser.add_argument(
            "--max-keys", type=int, default=4, help="keys per transaction, at most (default 4)"
        )
        parser.add_argument(
            "--retention", default="1d", help="change stream retention, e.g. 1h, 86400s (default 1d)"
        )
        parser.add_argument(
            "--epoch",
            help="creation time of the change stream, ISO 8601 (default: now - retention, floored to the "
            "minute); give the same value to --ground-truth to match a running server",
        )
        parser.add_argument(
            "--fault",
            action="append",
            default=[],
            metavar="SPEC",
            help="inject faults: unavailable:P, internal:P, malformed:P (per message or record) or slow:MS; "
            "repeatable",
        )
        parser.add_argument(
            "--max-workers", type=int, default=64, help="gRPC worker threads = open streams (64)"
        )
        _add_table_arguments(parser)
        parser.add_argument("--ground-truth", action="store_true", help="print the ground truth and exit")
        parser.add_argument("--table", help="with --ground-truth: the table whose row versions to print")
        parser.add_argument("--start", help="window start for --ground-truth (ISO 8601)")
        parser.add_argument("--end", help="window end for --ground-truth (ISO 8601)")

    def handle(self, *args, **options):
        """Print the ground truth, or serve until interrupted; bad options exit with status 2."""
        try:
            config = self._config(options)
        except ValueError as error:
            raise CommandError(str(error), returncode=2) from None
        if options["ground_truth"]:
            self._ground_truth(config, options)
            return
        self._serve(config, options["host"], options["port"])

    def _config(self, options) -> SimulatorConfig:
        databases = tuple(parse_database(d) for d in options["database"] or ())
        kwargs = {"databases": databases} if databases else {}
        if options["max_workers"] < 1:
            raise ValueError("--max-workers must be at least 1")
        update_after = parse_duration(options["table_update_after"])
        if update_after != int(update_after):
            raise ValueError(f"--table-update-after takes whole seconds, got {options['table_update_after']}")
        return SimulatorConfig(
            seed=options["seed"],
            stream=options["stream"],
            roots=options["roots"],
            split_every=parse_duration(options["split_every"]),
            merge_every=parse_duration(options["merge_every"]),
            tps=options["tps"],
            max_keys=options["max_keys"],
            retention=parse_duration(options["retention"]),
            epoch=parse_timestamp(options["epoch"]) if options["epoch"] else None,
            faults=tuple(parse_fault(f) for f in options["fault"]),
            max_workers=options["max_workers"],
            table_rate=options["table_rate"],
            table_shards=options["shards"],
            table_update_after=int(update_after),
            **kwargs,
        ).resolved()

    def _ground_truth(self, config: SimulatorConfig, options) -> None:
        if not (
            options["database"] and len(options["database"]) == 1 and options["start"] and options["end"]
        ):
            raise CommandError("--ground-truth needs one --database, --start and --end", returncode=2)
        try:
            start, end = parse_timestamp(options["start"]), parse_timestamp(options["end"])
            database = config.databases[0][0]
            if options["table"]:
                rows = table_ground_truth(config, database, options["table"], start, end)
                lines = (json.dumps(row, separators=(",", ":")) for row in rows)
            else:
                lines = ground_truth_lines(config, database, start, end)
            first = next(lines, None)  # a bad table or window fails here, before any output
            self.stderr.write(f"epoch {config.epoch.isoformat()} seed {config.seed}")
            out = sys.stdout
            for line in [first] if first is not None else []:
                out.write(line + "\n")
            for line in lines:
                out.write(line + "\n")
        except ValueError as error:
            raise CommandError(str(error), returncode=2) from None

    def _serve(self, config: SimulatorConfig, host: str, port: int) -> None:
        try:
            server = start_server(config, host, port)
        except (OSError, RuntimeError) as error:
            raise CommandError(f"cannot listen on {host}:{port}: {error}", returncode=2) from None
        databases = ", ".join(f"{name} ({dialect})" for name, dialect in config.databases)
        self.stdout.write(
            f"Spanner change stream simulator on {server.emulator_host}: stream {config.stream}, "
            f"databases {databases}, epoch {config.epoch.isoformat()}, seed {config.seed}\n"
            f"Commit-timestamp tables Events and ShardedEvents ({config.table_shards} shards; events and "
            f"sharded_events in PostgreSQL), {config.table_rate:g} row versions/s each\n"
            f"Use it with SPANNER_EMULATOR_HOST={server.emulator_host} (any project and instance). "
            "Ctrl-C stops it."
        )
        self.stdout.flush()
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        while not stop.wait(0.5):
            pass  # a timed wait keeps signal handlers responsive
        self.stdout.write("Stopping the simulator")
        server.stop(grace=1.0)
