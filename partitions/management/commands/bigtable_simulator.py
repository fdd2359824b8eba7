"""Run the local Bigtable change stream simulator, or print its ground truth for a window."""

from __future__ import annotations

import signal
import sys
import threading

from django.core.management.base import BaseCommand, CommandError

from partitions.simulator.bigtable.config import BigtableSimulatorConfig, parse_fault
from partitions.simulator.bigtable.groundtruth import ground_truth_lines
from partitions.simulator.bigtable.server import start_server
from partitions.simulator.core.config import parse_duration, parse_timestamp


class Command(BaseCommand):
    # The simulator needs no database: skip the system checks for a fast start.
    requires_system_checks = []
    help = (
        "Serve a deterministic Bigtable change stream over the real gRPC API (point the client at it "
        "with BIGTABLE_EMULATOR_HOST=HOST:PORT). Defaults: seed 1, table events with a change stream and "
        "table plain without, 4 root partitions, a split and a merge every 60 s, 20 changes/s, 1 day of "
        "retention; app profiles default and cdc route to one cluster, multi to several. With "
        "--ground-truth --table T --start T1 --end T2 print every change a correct reader of [T1, T2] "
        "must deliver, as JSON lines."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=8086, help="port to listen on (default 8086)")
        parser.add_argument("--seed", type=int, default=1, help="seed of everything served (default 1)")
        parser.add_argument(
            "--table",
            action="append",
            help="table with a change stream; repeatable (default: events)",
        )
        parser.add_argument("--roots", type=int, default=4, help="partitions at the epoch (default 4)")
        parser.add_argument("--split-every", default="60s", help="time between splits (default 60s)")
        parser.add_argument("--merge-every", default="60s", help="time between merges (default 60s)")
        parser.add_argument(
            "--tps", type=float, default=20.0, help="changes per second per table (default 20)"
        )
        parser.add_argument("--max-mods", type=int, default=4, help="mods per change, at most (default 4)")
        parser.add_argument(
            "--retention", default="1d", help="change stream retention, e.g. 1h, 7d (default 1d)"
        )
        parser.add_argument(
            "--epoch",
            help="when the change stream was enabled, ISO 8601 (default: now - retention, floored to the "
            "minute); give the same value to --ground-truth to match a running server",
        )
        parser.add_argument(
            "--fault",
            action="append",
            default=[],
            metavar="SPEC",
            help="inject faults: unavailable:P (per message) or slow:MS; repeatable",
        )
        parser.add_argument(
            "--raw-row-deletes",
            action="store_true",
            help="send row deletes as DeleteFromRow instead of a DeleteFromFamily per family",
        )
        parser.add_argument(
            "--max-workers", type=int, default=64, help="gRPC worker threads = open streams (64)"
        )
        parser.add_argument("--ground-truth", action="store_true", help="print the ground truth and exit")
        parser.add_argument("--start", help="window start for --ground-truth (ISO 8601)")
        parser.add_argument("--end", help="window end for --ground-truth (ISO 8601)")

    def handle(self, *args, **options):
        try:
            config = self._config(options)
        except ValueError as error:
            raise CommandError(str(error), returncode=2) from None
        if options["ground_truth"]:
            self._ground_truth(config, options)
            return
        self._serve(config, options["host"], options["port"])

    def _config(self, options) -> BigtableSimulatorConfig:
        if options["max_workers"] < 1:
            raise ValueError("--max-workers must be at least 1")
        tables = tuple(options["table"] or ()) or ("events",)
        return BigtableSimulatorConfig(
            seed=options["seed"],
            tables=tables,
            plain_tables=tuple(t for t in ("plain",) if t not in tables),
            roots=options["roots"],
            split_every=parse_duration(options["split_every"]),
            merge_every=parse_duration(options["merge_every"]),
            tps=options["tps"],
            max_mods=options["max_mods"],
            raw_row_deletes=options["raw_row_deletes"],
            retention=parse_duration(options["retention"]),
            epoch=parse_timestamp(options["epoch"]) if options["epoch"] else None,
            faults=tuple(parse_fault(f) for f in options["fault"]),
            max_workers=options["max_workers"],
        ).resolved()

    def _ground_truth(self, config: BigtableSimulatorConfig, options) -> None:
        if not (options["table"] and len(options["table"]) == 1 and options["start"] and options["end"]):
            raise CommandError("--ground-truth needs one --table, --start and --end", returncode=2)
        try:
            start, end = parse_timestamp(options["start"]), parse_timestamp(options["end"])
            lines = ground_truth_lines(config, config.tables[0], start, end)
            self.stderr.write(f"epoch {config.epoch.isoformat()} seed {config.seed}")
            out = sys.stdout
            for line in lines:
                out.write(line + "\n")
        except ValueError as error:
            raise CommandError(str(error), returncode=2) from None

    def _serve(self, config: BigtableSimulatorConfig, host: str, port: int) -> None:
        try:
            server = start_server(config, host, port)
        except (OSError, RuntimeError) as error:
            raise CommandError(f"cannot listen on {host}:{port}: {error}", returncode=2) from None
        self.stdout.write(
            f"Bigtable change stream simulator on {server.emulator_host}: tables {', '.join(config.tables)} "
            f"(change stream), {', '.join(config.plain_tables) or 'none'} (none), epoch "
            f"{config.epoch.isoformat()}, seed {config.seed}\n"
            f"Use it with BIGTABLE_EMULATOR_HOST={server.emulator_host} (any project and instance; app "
            "profile default or cdc). Ctrl-C stops it."
        )
        self.stdout.flush()
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        while not stop.wait(0.5):
            pass  # a timed wait keeps signal handlers responsive
        self.stdout.write("Stopping the simulator")
        server.stop(grace=1.0)
