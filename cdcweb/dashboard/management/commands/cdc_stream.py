"""`manage.py cdc_stream`: create, validate, import-datastream, start, pause, resume, recover,
backfill, delete, status, release-lease, reread.

Run streams from a script; watched (Datastream) streams are imported, then operated the same way;
``release-lease`` and ``reread`` act on one partition (by id).

Every error is one line on stderr and exit status 2, so a script can tell a
refusal (wrong state, bad argument) from a crash (status 1 with a traceback).
``validate`` takes the create flags, prints one line per check of the source and
exits 1 when a check fails (creating nothing).
"""

from __future__ import annotations

import argparse
import getpass
import json
import re
import sys
import textwrap
import time

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from cdcweb.dashboard import deletion, validation
from cdcweb.dashboard.kinds import SettingsError, clean_settings
from cdcweb.dashboard.status import statuses as stream_statuses
from partitions.models import Partition
from partitions.pipeline import partition_actions
from partitions.pipeline.queue import NAMED
from partitions.sources import DEFAULT_KIND, KINDS
from partitions.sources.base import SettingsError as KindSettingsError
from partitions.sources.base import SourceError
from partitions.watch import importing
from streams import actions
from streams.models import MAX_HEARTBEAT_MS, MIN_HEARTBEAT_MS, Stream, StreamOperation
from streams.times import format_time, parse_time
from streams.transitions import TransitionNotAllowed

TIME_OPTIONS = ("--start", "--end", "--timestamp", "--from")
RELATIVE_TIME = re.compile(r"^-\d+(\.\d+)?(us|ms|s|m|h|d)$")
# Values that start with "-" but are no option: a relative time ("-30m") after a time
# option, shard values ("-18-18", the form the help and the DDL advisor print) after --shards.
DASH_VALUES = {**dict.fromkeys(TIME_OPTIONS, RELATIVE_TIME), "--shards": re.compile(r"^-(?!-)")}
# How often the CLI reads a watched stream's operation while a worker follows it (one SELECT).
FOLLOW_INTERVAL_S = 0.5
TABLE_COLUMNS = ("NAME", "STATE", "LAG", "LOW WATERMARK", "RECORDS", "PARTITIONS C/S/R/F", "REASON")


def setting_flags() -> dict[str, tuple[str, str]]:
    """Return {flag: (setting name, help)} over every kind (kinds share flags such as --project)."""
    flags: dict[str, tuple[str, str]] = {}
    for kind in KINDS.values():
        for setting in kind.settings:
            flag = setting.cli or f"--{setting.name.replace('_', '-')}"
            flags.setdefault(flag, (setting.name, setting.help))
    return flags


def kinds_epilog() -> str:
    """Return, per kind, the flags it takes ([optional]) and where it connects."""
    lines = ["settings of each --kind:"]
    for kind in KINDS.values():
        flags = [
            (s.cli or f"--{s.name.replace('_', '-')}") if s.required else f"[{s.cli or s.name}]"
            for s in kind.settings
        ]
        refused = " (cannot be created yet)" if kind.unavailable else ""
        lines.append(f"  {kind.name}{refused}: {' '.join(flags)}")
        if kind.endpoint:
            lines.append(
                textwrap.fill(kind.endpoint, 88, initial_indent="    reads ", subsequent_indent="    ")
            )
    return "\n".join(lines)


def refuse(message: str) -> CommandError:
    """Return the one-line error every refusal of this command raises (exit status 2)."""
    return CommandError(message, returncode=2)


def _join_dash_values(args: list[str] | None) -> list[str] | None:
    """Turn ["--start", "-30m"] into ["--start=-30m"]: argparse takes "-30m" for an option."""
    if args is None:
        return None
    joined: list[str] = []
    for arg in args:
        value = DASH_VALUES.get(joined[-1]) if joined else None
        if value is not None and value.match(str(arg)):
            joined[-1] = f"{joined[-1]}={arg}"
        else:
            joined.append(arg)
    return joined


class OneLineParser(CommandParser):
    """An argument parser whose usage errors are one line and exit status 2."""

    def parse_args(self, args=None, namespace=None):
        return super().parse_args(_join_dash_values(args), namespace)

    def error(self, message):
        if self.called_from_command_line:
            sys.stderr.write(f"{self.prog}: error: {message}\n")
            sys.exit(2)
        raise refuse(f"Error: {message}")


class Command(BaseCommand):
    help = "Create, start, pause, resume, recover, delete and show cdcweb streams."

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # BaseCommand builds a plain CommandParser; OneLineParser only adds behaviour, no state.
        parser.__class__ = OneLineParser
        return parser

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
        for name, help_text in (
            ("create", "register a stream (NOT_STARTED)"),
            ("validate", "check a create's flags against the source"),
        ):
            _add_create_flags(
                sub.add_parser(
                    name,
                    help=help_text,
                    epilog=kinds_epilog(),
                    formatter_class=argparse.RawDescriptionHelpFormatter,
                )
            )
        for name in ("start", "pause", "resume"):
            acting = sub.add_parser(name, help=f"{name} a stream")
            acting.add_argument("name")
            _add_follow_flags(acting)
        recover = sub.add_parser("recover", help="recover a FAILED_PERMANENTLY stream")
        recover.add_argument("name")
        _add_follow_flags(recover)
        recover.add_argument("--strategy", required=True, choices=actions.RECOVERY_STRATEGIES)
        recover.add_argument("--timestamp", default=None, help="ISO 8601 with a zone (strategy timestamp)")
        recover.add_argument(
            "--position",
            default=None,
            help="a watched stream's source log position (strategy position): mysql:FILE:OFFSET, "
            "gtid:SET, oracle:SCN, sqlserver:LSN, or the API's JSON",
        )
        imports = sub.add_parser(
            "import-datastream",
            help="watch every Datastream stream of a location (or the one --stream names)",
        )
        imports.add_argument("--project", dest="ds_project", required=True, help="the Google Cloud project")
        imports.add_argument(
            "--location", dest="ds_location", required=True, help="a region such as us-central1"
        )
        imports.add_argument(
            "--stream", dest="ds_stream", default=None, help="one stream's ID (default: all)"
        )
        imports.add_argument("--log-retention-hours", dest="ds_retention", type=int, default=None)
        backfill = sub.add_parser("backfill", help="start or stop one object's backfill (a watched stream)")
        backfill.add_argument("what", choices=actions.BACKFILL_ACTIONS)
        backfill.add_argument("name")
        backfill.add_argument("--object", required=True, help="the object's ID")
        _add_follow_flags(backfill)
        delete = sub.add_parser("delete", help="delete a stream (once it has read: stopped, and --data)")
        delete.add_argument("name")
        delete.add_argument(
            "--data", choices=list(deletion.DATA), default="",
            help="what becomes of its landed files: keep them (read by nothing) or purge them",
        )  # fmt: skip
        release = sub.add_parser("release-lease", help="end the lease a reader holds on a partition")
        release.add_argument("partition", type=int, help="the partition's id")
        reread = sub.add_parser(
            "reread", help="read a partition again from a time, landing its records again"
        )
        reread.add_argument("partition", type=int, help="the partition's id")
        reread.add_argument("--from", dest="at", required=True, help="ISO 8601 with a zone, or '-30m'")
        status = sub.add_parser("status", help="show streams")
        status.add_argument("name", nargs="?")
        status.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, **options):
        action = options["action"].replace("-", "_")
        try:
            getattr(self, f"do_{action.replace('-', '_')}")(options)
        except (
            TransitionNotAllowed,
            actions.InvalidAction,
            deletion.DeletionRefused,
            partition_actions.ActionRefused,
        ) as exc:
            raise refuse(str(exc)) from None
        except KindSettingsError as exc:
            raise refuse("; ".join(f"--{n.replace('_', '-')}: {m}" for n, m in exc.errors.items())) from None
        except SourceError as exc:
            raise refuse(f"Datastream: {exc}") from None

    def do_import_datastream(self, options) -> None:
        done = importing.import_streams(
            options["ds_project"],
            options["ds_location"],
            options["ds_stream"],
            log_retention_hours=options["ds_retention"],
        )
        for stream in done.created:
            self.stdout.write(
                f"watching stream '{stream.name}' ({stream.state}): {stream.connection['stream_id']}"
            )
        for stream in done.existing:
            self.stdout.write(f"already watched: '{stream.name}'")
        self.stdout.write(f"{len(done.created)} imported, {len(done.existing)} already watched")

    def do_backfill(self, options) -> None:
        stream = actions.backfill(
            self._stream(options["name"]), options["object"], options["what"], by=self._by()
        )
        self._report(stream, options)

    def do_create(self, options) -> None:
        kind = KINDS[options["kind"]]
        stream = self._new_stream(kind, options)
        stream.save()
        end = format_time(stream.end_at) if stream.end_at else "no end"
        self.stdout.write(
            f"created stream '{stream.name}' ({stream.state}): {kind.describe(stream.connection)}, "
            f"from {format_time(stream.start_at)} to {end}"
        )

    def do_validate(self, options) -> None:
        """Print each check of the source as one line; exit 1 when one fails."""
        stream = self._new_stream(KINDS[options["kind"]], options)
        results = validation.validate(stream.source_kind, stream.connection, stream.start_at)
        for result in results:
            self.stdout.write(f"{'ok  ' if result.ok else 'FAIL'}  {result.check}: {result.detail}")
        failures = sum(not r.ok for r in results)
        if failures:
            raise CommandError(f"{failures} of {len(results)} checks failed", returncode=1)

    def _new_stream(self, kind, options) -> Stream:
        """Return the stream the create flags describe, checked as a create checks it (not saved)."""
        stream = Stream(
            name=options["name"],
            source_kind=kind.name,
            connection=self._settings(kind, options),
            heartbeat_ms=options["heartbeat_ms"],
            start_at=self._time(options["start"], "--start"),
            end_at=self._time(options["end"], "--end") if options["end"] else None,
            window_seconds=options["window_seconds"],
        )
        self._validate(stream)
        return stream

    @staticmethod
    def _settings(kind, options) -> dict:
        """Return the kind's settings from their flags, cleaned; refuse another kind's flag."""
        own = {s.name for s in kind.settings}
        for flag, (dest, _) in setting_flags().items():
            if options.get(dest) is not None and dest not in own:
                raise refuse(f"{flag} is not a setting of {kind.name} streams (--kind)")
        given = {name: options[name] for name in own if options.get(name) is not None}
        try:
            return clean_settings(kind.name, given)
        except SettingsError as refused:
            flags = {"source_kind": "--kind", **{s.name: s.cli or s.name for s in kind.settings}}
            raise refuse("; ".join(f"{flags.get(n, n)}: {m}" for n, m in refused.errors.items())) from None

    def _validate(self, stream: Stream) -> None:
        """Raise a one-line refusal for the first thing wrong with a new stream."""
        if Stream.objects.filter(name=stream.name).exists():
            raise refuse(f"a stream named '{stream.name}' already exists")
        if not MIN_HEARTBEAT_MS <= stream.heartbeat_ms <= MAX_HEARTBEAT_MS:
            raise refuse(
                f"--heartbeat-ms must be between {MIN_HEARTBEAT_MS:,} and {MAX_HEARTBEAT_MS:,}, "
                f"got {stream.heartbeat_ms:,}"
            )
        if stream.end_at is not None and stream.end_at <= stream.start_at:
            raise refuse(
                f"--end ({format_time(stream.end_at)}) must be after --start ({format_time(stream.start_at)})"
            )
        if not 1 <= stream.window_seconds <= 86_400:
            raise refuse(f"--window-seconds must be between 1 and 86,400, got {stream.window_seconds}")
        try:
            stream.full_clean()
        except ValidationError as exc:
            raise refuse("; ".join(f"{f}: {' '.join(m)}" for f, m in exc.message_dict.items())) from None

    @staticmethod
    def _time(text: str, option: str):
        try:
            return parse_time(text)
        except ValueError as exc:
            raise refuse(f"{option}: {exc}") from None

    @staticmethod
    def _stream(name: str) -> Stream:
        stream = Stream.objects.filter(name=name).first()
        if stream is None:
            raise refuse(f"no stream named '{name}' (see: manage.py cdc_stream status)")
        return stream

    @staticmethod
    def _by() -> str:
        try:
            return f"cdc_stream ({getpass.getuser()})"
        except (KeyError, OSError):  # no user name in a bare container
            return "cdc_stream"

    def _report(self, stream: Stream, options) -> None:
        """Say what the action did; a watched stream's operation is followed to its end unless --no-wait."""
        operation = getattr(stream, "sent_operation", None)
        if operation is None:
            self.stdout.write(f"stream '{stream.name}': {stream.state} ({stream.state_reason})")
            return
        what = f"{operation.action.replace('_', ' ')}{f' of {operation.target}' if operation.target else ''}"
        self.stdout.write(f"stream '{stream.name}': {what} sent to the source (operation {operation.pk})")
        if options["no_wait"]:
            return
        if not options["wait"] > 0:
            raise refuse(f"--wait must be more than 0 seconds, got {options['wait']:g}")
        self._follow(stream, operation, options["wait"])

    def _follow(self, stream: Stream, operation: StreamOperation, wait: float) -> None:
        """Print the operation's progress as a worker follows it; refuse in one line if the source refused."""
        deadline, said = time.monotonic() + wait, ""
        while True:
            operation.refresh_from_db()
            line = f"  {operation.status}: {operation.message or 'waiting for a worker'}"
            if line != said:
                self.stdout.write(f"{line} ({operation.elapsed_seconds:.1f} s)")
                said = line
            if operation.status in StreamOperation.FINISHED:
                break
            if time.monotonic() >= deadline:
                raise CommandError(
                    f"operation {operation.pk} is still {operation.status} after {wait:g} s; it goes on: "
                    f"see the stream's page or GET /api/v1/streams/{stream.pk}/operations/{operation.pk}/",
                    returncode=1,
                )
            time.sleep(FOLLOW_INTERVAL_S)
        if operation.status != StreamOperation.Status.DONE:
            code = f" ({operation.code})" if operation.code else ""
            raise refuse(f"the source {operation.status.lower()} it{code}: {operation.message}")
        stream.refresh_from_db()
        self.stdout.write(f"stream '{stream.name}': {stream.state} ({operation.message})")

    def do_start(self, options) -> None:
        self._report(actions.start(self._stream(options["name"]), by=self._by()), options)

    def do_pause(self, options) -> None:
        self._report(actions.pause(self._stream(options["name"]), by=self._by()), options)

    def do_resume(self, options) -> None:
        self._report(actions.resume(self._stream(options["name"]), by=self._by()), options)

    def do_recover(self, options) -> None:
        stream = self._stream(options["name"])
        timestamp = self._time(options["timestamp"], "--timestamp") if options["timestamp"] else None
        recovered = actions.recover(
            stream, options["strategy"], timestamp, by=self._by(), position=options["position"]
        )
        self._report(recovered, options)

    def do_delete(self, options) -> None:
        done = deletion.delete_stream(self._stream(options["name"]), options["data"], by=self._by())
        purged = f", {done.files_purged} files deleted" if done.data == "purge" else ""
        self.stdout.write(f"deleted stream '{done.name}' (id {done.stream_id}): data {done.data}{purged}")

    @staticmethod
    def _partition(partition_id: int) -> int:
        if not Partition.objects.filter(pk=partition_id).exists():
            raise refuse(f"no partition with id {partition_id} (see the stream's page or the API)")
        return partition_id

    def do_release_lease(self, options) -> None:
        done = partition_actions.release_lease(self._partition(options["partition"]), self._by(), NAMED)
        self.stdout.write(f"partition {done.pk}: lease released ({done.state})")

    def do_reread(self, options) -> None:
        at = self._time(options["at"], "--from")
        done = partition_actions.reread(self._partition(options["partition"]), at, self._by(), NAMED)
        self.stdout.write(
            f"partition {done.pk}: re-reading from {format_time(done.watermark)} ({done.state})"
        )

    def do_status(self, options) -> None:
        """Print one stream (an object in JSON) or every stream (a list in JSON)."""
        if options["name"]:
            statuses = stream_statuses([self._stream(options["name"])])
        else:
            statuses = stream_statuses(list(Stream.objects.order_by("name")))
        if options["json"]:
            payload = statuses[0] if options["name"] else statuses
            self.stdout.write(json.dumps(payload, indent=2))
        else:
            self.stdout.write(format_table(statuses))


def _add_follow_flags(parser) -> None:
    """Add how an action on a watched stream is followed: to its end (default), or not at all."""
    parser.add_argument(
        "--no-wait", action="store_true", help="a watched stream: return once the operation is sent"
    )
    parser.add_argument(
        "--wait",
        type=float,
        default=600.0,
        help="a watched stream: follow its operation for at most this many seconds (600)",
    )


def _add_create_flags(parser) -> None:
    """Add the flags of a create (the name, the kind, every kind's settings, times) to a subcommand."""
    parser.add_argument("name")
    parser.add_argument("--kind", choices=list(KINDS), default=DEFAULT_KIND, help="the kind of source")
    for flag, (dest, help_text) in setting_flags().items():
        parser.add_argument(flag, dest=dest, default=None, help=help_text)
    parser.add_argument("--start", default="now", help="ISO 8601 with a zone, 'now' or '-30m'")
    parser.add_argument("--end", default=None, help="ISO 8601 with a zone, 'now' or '+1h'")
    parser.add_argument("--heartbeat-ms", type=int, default=10_000)
    parser.add_argument("--window-seconds", type=int, default=60)


def format_table(statuses: list[dict]) -> str:
    """Return the statuses as an aligned text table."""
    rows = [TABLE_COLUMNS] + [_row(s) for s in statuses]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS) - 1)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]) for row in rows]
    if not statuses:
        lines.append("(no streams: create one with manage.py cdc_stream create)")
    return "\n".join(line.rstrip() for line in lines)


def _row(status: dict) -> tuple[str, ...]:
    counts = status["partitions_by_state"]
    lag = status["lag_seconds"]
    return (
        status["name"],
        status["state"],
        "-" if lag is None else f"{lag:,.1f}s",
        status["low_watermark"] or "-",
        f"{status['data_records']:,}",
        "/".join(str(counts[s]) for s in ("CREATED", "SCHEDULED", "RUNNING", "FINISHED")),
        status["state_reason"],
    )
