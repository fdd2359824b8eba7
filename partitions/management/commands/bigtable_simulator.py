"""Run the local Bigtable change stream simulator, or print its ground truth for a window."""

from __future__ import annotations

from partitions.management.simulator_command import ChangeStreamSimulatorCommand, change_stream_options
from partitions.simulator.bigtable.config import BigtableSimulatorConfig, parse_fault
from partitions.simulator.bigtable.groundtruth import ground_truth_lines
from partitions.simulator.bigtable.server import start_server


class Command(ChangeStreamSimulatorCommand):
    """Serve the simulator, or print a window's ground truth."""

    help = (
        "Serve a deterministic Bigtable change stream over the real gRPC API (point the client at it "
        "with BIGTABLE_EMULATOR_HOST=HOST:PORT). Defaults: seed 1, table events with a change stream and "
        "table plain without, 4 root partitions, a split and a merge every 60 s, 20 changes/s, 1 day of "
        "retention; app profiles default and cdc route to one cluster, multi to several. With "
        "--ground-truth --table T --start T1 --end T2 print every change a correct reader of [T1, T2] "
        "must deliver, as JSON lines."
    )
    default_port = 8086
    tps_help = "changes per second per table"
    fault_help = "inject faults: unavailable:P (per message) or slow:MS; repeatable"
    source = "table"
    source_help = "table with a change stream; repeatable (default: events)"
    start_server = staticmethod(start_server)

    def add_arguments(self, parser):
        """Declare the options (see --help)."""
        super().add_arguments(parser)
        parser.add_argument("--max-mods", type=int, default=4, help="mods per change, at most (default 4)")
        parser.add_argument(
            "--raw-row-deletes",
            action="store_true",
            help="send row deletes as DeleteFromRow instead of a DeleteFromFamily per family",
        )
        parser.add_argument(
            "--shared-timestamps",
            type=float,
            default=0.0,
            metavar="P",
            help="chance that a user change has a twin from the other cluster at the same commit timestamp "
            "(default 0)",
        )
        parser.add_argument(
            "--merge-stagger",
            type=float,
            default=0.0,
            metavar="SECONDS",
            help="the right parent of a merge closes this long after the left (default 0: both at once)",
        )
        parser.add_argument(
            "--wide-merge-tokens",
            action="store_true",
            help="name the merged child's whole range in each closing parent's token, as the real server "
            "has been seen to (readers must intersect it with the parent's range)",
        )

    def config(self, options) -> BigtableSimulatorConfig:
        """Return the resolved config the options describe."""
        tables = tuple(options["table"] or ()) or ("events",)
        return BigtableSimulatorConfig(
            tables=tables,
            plain_tables=tuple(t for t in ("plain",) if t not in tables),
            max_mods=options["max_mods"],
            raw_row_deletes=options["raw_row_deletes"],
            wide_merge_tokens=options["wide_merge_tokens"],
            shared_timestamp_chance=options["shared_timestamps"],
            merge_stagger=options["merge_stagger"],
            **change_stream_options(options, parse_fault),
        ).resolved()

    def ground_truth(self, config: BigtableSimulatorConfig, options, start, end):
        """Yield the table's changes in [start, end]."""
        return ground_truth_lines(config, config.tables[0], start, end)

    def banner(self, config: BigtableSimulatorConfig, server) -> str:
        """Return where it serves which tables, and the client's variable."""
        return (
            f"Bigtable change stream simulator on {server.emulator_host}: tables {', '.join(config.tables)} "
            f"(change stream), {', '.join(config.plain_tables) or 'none'} (none), epoch "
            f"{config.epoch.isoformat()}, seed {config.seed}\n"
            f"Use it with BIGTABLE_EMULATOR_HOST={server.emulator_host} (any project and instance; app "
            "profile default or cdc). Ctrl-C stops it."
        )
