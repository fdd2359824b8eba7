"""Run the local Datastream and Cloud Monitoring simulator."""

from __future__ import annotations

import sys

from partitions.management.simulator_command import SimulatorCommand
from partitions.simulator.datastream.config import DatastreamSimConfig
from partitions.simulator.datastream.server import start_server


class Command(SimulatorCommand):
    """manage.py datastream_simulator: serve simulated Datastream streams until stopped."""

    help = (
        "Serve simulated Datastream streams over the real v1 gRPC API, with long-running operations "
        "and Cloud Monitoring metrics (point cdcweb at it with DATASTREAM_API_ENDPOINT=HOST:PORT and "
        "MONITORING_API_ENDPOINT=HOST:PORT). Streams move through every state by seed; pause, resume, "
        "recover and backfills change them."
    )
    default_port = 8087
    port_help = "port to listen on, 0 for any"
    start_server = staticmethod(start_server)

    def create_parser(self, prog_name, subcommand, **kwargs):
        """Return Django's parser, made to report a bad option in one stderr line, status 2."""
        parser = super().create_parser(prog_name, subcommand, **kwargs)

        def one_line_error(message):  # argparse prints usage too; a bad option is one line here
            """Print argparse's complaint as one line and exit with status 2."""
            sys.stderr.write(f"datastream_simulator: {message}\n")
            sys.exit(2)

        parser.error = one_line_error
        return parser

    def add_arguments(self, parser):
        """Declare the options: where to listen, and what to simulate at which pace."""
        super().add_arguments(parser)
        parser.add_argument("--streams", type=int, default=20, help="streams to serve (default 20)")
        parser.add_argument("--seed", type=int, default=1, help="seed of everything served (default 1)")
        parser.add_argument("--project", default="demo-project", help="project ID (default demo-project)")
        parser.add_argument("--location", default="us-central1", help="location (default us-central1)")
        parser.add_argument(
            "--cycle",
            type=float,
            default=1800.0,
            help="seconds for a stream to pass through every state (1800)",
        )
        parser.add_argument(
            "--operation-seconds", type=float, default=3.0, help="how long pause/resume/recover run (3)"
        )
        parser.add_argument(
            "--backfill-seconds", type=float, default=20.0, help="how long a manual backfill runs (20)"
        )
        parser.add_argument(
            "--metric-step", type=float, default=60.0, help="seconds between metric points (60)"
        )
        parser.add_argument("--epoch", type=float, help="unix time the scripts start from (default: now)")
        parser.add_argument(
            "--missing-metric",
            action="append",
            default=[],
            metavar="SUFFIX",
            help="a metric type suffix (e.g. freshness) whose descriptor Cloud Monitoring lacks; repeatable",
        )

    def config(self, options) -> DatastreamSimConfig:
        """Return the checked config the options describe."""
        if not 0 <= options["port"] <= 65535:
            raise ValueError("--port must be between 0 and 65535")
        return DatastreamSimConfig(
            seed=options["seed"],
            streams=options["streams"],
            project=options["project"],
            location=options["location"],
            cycle=options["cycle"],
            operation_seconds=options["operation_seconds"],
            backfill_seconds=options["backfill_seconds"],
            metric_step=options["metric_step"],
            epoch=options["epoch"],
            missing_metrics=tuple(options["missing_metric"]),
        ).resolved()

    def banner(self, config: DatastreamSimConfig, server) -> str:
        """Return where it serves which streams, and the clients' variables."""
        return (
            f"Datastream simulator on {server.endpoint}: {config.streams} streams in {config.parent}, "
            f"seed {config.seed}, epoch {config.epoch:.0f}\n"
            f"Use it with DATASTREAM_API_ENDPOINT={server.endpoint} "
            f"MONITORING_API_ENDPOINT={server.endpoint}. Ctrl-C stops it."
        )
