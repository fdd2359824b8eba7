"""Run the local Spanner simulator, or print its ground truth for a window (a change stream or a table)."""

from __future__ import annotations

import json

from partitions.management.simulator_command import ChangeStreamSimulatorCommand, change_stream_options
from partitions.simulator.core.config import parse_duration
from partitions.simulator.spanner.config import SimulatorConfig, parse_database, parse_denial, parse_fault
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


class Command(ChangeStreamSimulatorCommand):
    """Serve the simulator, or print a window's ground truth."""

    help = (
        "Serve a deterministic Spanner change stream over the real gRPC API (point the client at it "
        "with SPANNER_EMULATOR_HOST=HOST:PORT). Defaults: seed 1, databases demo-db (GoogleSQL) and "
        "demo-pg (PostgreSQL), stream Changes, 4 root partitions, a split and a merge every 60 s, "
        "20 transactions/s, 1 day of retention. Every database also serves tables with a commit timestamp "
        "column (Events and ShardedEvents; events and sharded_events in PostgreSQL). With --ground-truth "
        "--database D --start T1 --end T2 print every data change record a correct reader of [T1, T2] "
        "must deliver, as JSON lines; add --table T for the row versions a correct poller of T must deliver."
    )
    default_port = 9010
    tps_help = "transactions per second"
    fault_help = (
        "inject faults: unavailable:P, internal:P, malformed:P (per message or record) or slow:MS; repeatable"
    )
    source = "database"
    source_metavar = "NAME[:DIALECT]"
    source_help = (
        "database to serve, dialect googlesql (default) or postgresql; repeatable "
        "(default: demo-db:googlesql and demo-pg:postgresql)"
    )
    start_server = staticmethod(start_server)

    def add_arguments(self, parser):
        """Declare the options (see --help)."""
        super().add_arguments(parser)
        parser.add_argument("--stream", default="Changes", help="change stream name (default Changes)")
        parser.add_argument(
            "--max-keys", type=int, default=4, help="keys per transaction, at most (default 4)"
        )
        _add_table_arguments(parser)
        parser.add_argument("--table", help="with --ground-truth: the table whose row versions to print")
        parser.add_argument(
            "--deny",
            action="append",
            metavar="DATABASE[:ROLE]",
            help="answer PERMISSION_DENIED as Cloud Spanner does: DATABASE alone, every query of callers "
            "without a database role (they lack spanner.databases.select; GetDatabase still answers); "
            "DATABASE:ROLE, change stream queries of sessions with that database role (it lacks EXECUTE "
            "on the read function); repeatable",
        )

    def config(self, options) -> SimulatorConfig:
        """Return the resolved config the options describe."""
        databases = tuple(parse_database(d) for d in options["database"] or ())
        kwargs = {"databases": databases} if databases else {}
        shared = change_stream_options(options, parse_fault)
        update_after = parse_duration(options["table_update_after"])
        if update_after != int(update_after):
            raise ValueError(f"--table-update-after takes whole seconds, got {options['table_update_after']}")
        return SimulatorConfig(
            stream=options["stream"],
            max_keys=options["max_keys"],
            table_rate=options["table_rate"],
            table_shards=options["shards"],
            table_update_after=int(update_after),
            denied=tuple(parse_denial(d) for d in options["deny"] or ()),
            **shared,
            **kwargs,
        ).resolved()

    def ground_truth(self, config: SimulatorConfig, options, start, end):
        """Yield the change stream's records in [start, end], or a table's row versions with --table."""
        database = config.databases[0][0]
        if options["table"]:
            rows = table_ground_truth(config, database, options["table"], start, end)
            return (json.dumps(row, separators=(",", ":")) for row in rows)
        return ground_truth_lines(config, database, start, end)

    def banner(self, config: SimulatorConfig, server) -> str:
        """Return where it serves which databases and tables, and the client's variable."""
        databases = ", ".join(f"{name} ({dialect})" for name, dialect in config.databases)
        return (
            f"Spanner change stream simulator on {server.emulator_host}: stream {config.stream}, "
            f"databases {databases}, epoch {config.epoch.isoformat()}, seed {config.seed}\n"
            f"Commit-timestamp tables Events and ShardedEvents ({config.table_shards} shards; events and "
            f"sharded_events in PostgreSQL), {config.table_rate:g} row versions/s each\n"
            f"Use it with SPANNER_EMULATOR_HOST={server.emulator_host} (any project and instance). "
            "Ctrl-C stops it."
        )
