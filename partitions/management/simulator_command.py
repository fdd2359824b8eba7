"""What the simulator commands share: where to listen, bad options as one line and status 2, serving
until a signal, and for the change-stream simulators their common options and ground truth.

The simulators themselves are pure (partitions/simulator/); this is their Django face.
"""

from __future__ import annotations

import itertools
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime

from django.core.management.base import BaseCommand, CommandError

from partitions.simulator.core.config import Fault, parse_duration, parse_timestamp


class SimulatorCommand(BaseCommand):
    """Build a simulator's config from the options, then serve it until SIGINT or SIGTERM."""

    # The simulator needs no database: skip the system checks for a fast start.
    requires_system_checks = []
    default_port = 0
    port_help = "port to listen on"
    start_server: Callable  # the simulator's start_server(config, host, port), as a staticmethod

    def add_arguments(self, parser):
        """Declare where to listen; a simulator's own options follow."""
        parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        port_help = f"{self.port_help} (default {self.default_port})"
        parser.add_argument("--port", type=int, default=self.default_port, help=port_help)

    def handle(self, *args, **options):
        """Serve until interrupted (or do what the options ask instead); bad options exit with status 2."""
        try:
            config = self.config(options)
        except ValueError as error:
            raise CommandError(str(error), returncode=2) from None
        self.run(config, options)

    def config(self, options):
        """Return the simulator's resolved config; ValueError (one line) for a bad option."""
        raise NotImplementedError

    def banner(self, config, server) -> str:
        """Return what to print once it serves: where, what, and how to point a client at it."""
        raise NotImplementedError

    def run(self, config, options) -> None:
        """Serve the config on the options' host and port."""
        self.serve(config, options["host"], options["port"])

    def serve(self, config, host: str, port: int) -> None:
        """Start the server, print the banner, and wait for a signal to stop it."""
        try:
            server = self.start_server(config, host, port)
        except (OSError, RuntimeError) as error:
            raise CommandError(f"cannot listen on {host}:{port}: {error}", returncode=2) from None
        self.stdout.write(self.banner(config, server))
        self.stdout.flush()
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        while not stop.wait(0.5):
            pass  # a timed wait keeps signal handlers responsive
        self.stdout.write("Stopping the simulator")
        server.stop(grace=1.0)


class ChangeStreamSimulatorCommand(SimulatorCommand):
    """A change-stream simulator's command: the options of ChangeStreamConfig, and --ground-truth."""

    tps_help = "events per second"
    fault_help = ""
    source = ""  # the repeatable option naming what is served (database, table); --ground-truth takes one
    source_metavar: str | None = None
    source_help = ""

    def add_arguments(self, parser):
        """Declare the options every change-stream simulator takes; each adds its own after these."""
        super().add_arguments(parser)
        parser.add_argument(
            f"--{self.source}", action="append", metavar=self.source_metavar, help=self.source_help
        )
        parser.add_argument("--seed", type=int, default=1, help="seed of everything served (default 1)")
        parser.add_argument("--roots", type=int, default=4, help="partitions at the epoch (default 4)")
        parser.add_argument("--split-every", default="60s", help="time between splits (default 60s)")
        parser.add_argument("--merge-every", default="60s", help="time between merges (default 60s)")
        parser.add_argument("--tps", type=float, default=20.0, help=f"{self.tps_help} (default 20)")
        parser.add_argument(
            "--retention", default="1d", help="change stream retention, e.g. 1h, 7d (default 1d)"
        )
        parser.add_argument(
            "--epoch",
            help="when the change stream was created, ISO 8601 (default: now - retention, floored to the "
            "minute); give the same value to --ground-truth to match a running server",
        )
        parser.add_argument("--fault", action="append", default=[], metavar="SPEC", help=self.fault_help)
        parser.add_argument(
            "--max-workers",
            type=int,
            default=64,
            help="gRPC worker threads (64): one per open stream of the Bigtable simulator; the Spanner "
            "simulator's streams need none (its unary calls use them)",
        )
        parser.add_argument("--ground-truth", action="store_true", help="print the ground truth and exit")
        parser.add_argument("--start", help="window start for --ground-truth (ISO 8601)")
        parser.add_argument("--end", help="window end for --ground-truth (ISO 8601)")

    def ground_truth(self, config, options, start: datetime, end: datetime) -> Iterator[str]:
        """Yield the JSON lines a correct reader of [start, end] must deliver; ValueError if it cannot."""
        raise NotImplementedError

    def run(self, config, options) -> None:
        """Print the ground truth if asked, else serve."""
        if options["ground_truth"]:
            self.print_ground_truth(config, options)
        else:
            super().run(config, options)

    def print_ground_truth(self, config, options) -> None:
        """Print the window's ground truth on stdout, the epoch and seed on stderr; status 2 if it cannot."""
        named = options[self.source] or ()
        if not (len(named) == 1 and options["start"] and options["end"]):
            raise CommandError(f"--ground-truth needs one --{self.source}, --start and --end", returncode=2)
        try:
            start, end = parse_timestamp(options["start"]), parse_timestamp(options["end"])
            lines = self.ground_truth(config, options, start, end)
            first = next(lines, None)  # a bad table or window fails here, before any output
            self.stderr.write(f"epoch {config.epoch.isoformat()} seed {config.seed}")
            out = sys.stdout
            for line in itertools.chain([first] if first is not None else [], lines):
                out.write(line + "\n")
        except ValueError as error:
            raise CommandError(str(error), returncode=2) from None


def change_stream_options(options, parse_fault: Callable[[str], Fault]) -> dict:
    """Return the ChangeStreamConfig fields the options give; ValueError (one line) for a bad one."""
    if options["max_workers"] < 1:
        raise ValueError("--max-workers must be at least 1")
    return {
        "seed": options["seed"],
        "roots": options["roots"],
        "split_every": parse_duration(options["split_every"]),
        "merge_every": parse_duration(options["merge_every"]),
        "tps": options["tps"],
        "retention": parse_duration(options["retention"]),
        "epoch": parse_timestamp(options["epoch"]) if options["epoch"] else None,
        "faults": tuple(parse_fault(f) for f in options["fault"]),
        "max_workers": options["max_workers"],
    }
