"""Decode speed of Bigtable change stream messages: the client's proto-plus vs cdcweb's reader.

Records ReadChangeStreamResponse messages from the Bigtable simulator (raw bytes, exactly
what its gRPC handler sends; ``--over-grpc`` receives them through a channel instead:
every partition of past windows, chunked changes and heartbeats included), then decodes
the same bytes two ways in one process:

  client   proto-plus: ReadChangeStreamResponse.deserialize (what the official client
           does to every message), then the fields walked through the proto-plus wrappers
           and reassembled into the same typed changes;
  cdcweb   the reader's own path: the same deserialize (the reader goes through the
           official client too), then the wrapped raw protobuf (``.pb()``) fed to
           ``BigtableRead.on_response`` (change assembly, tokens, watermark);
  raw      for reference: ``FromString`` straight to raw protobuf, then the same reader path.

Rates are mods per CPU second (best of the repeats); both paths are checked to agree first.

Run: nice -n 10 .venv/bin/python benchmarks/bigtable_decode.py [--messages 200000] [--repeats 1] [--over-grpc]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
from google.cloud.bigtable_v2 import types as bt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from partitions.simulator.bigtable.config import BigtableSimulatorConfig  # noqa: E402
from partitions.simulator.bigtable.keys import partition_range  # noqa: E402
from partitions.simulator.bigtable.progress import Progress  # noqa: E402
from partitions.simulator.bigtable.server import start_server  # noqa: E402
from partitions.simulator.bigtable.stream import plan_read  # noqa: E402
from partitions.simulator.core.clock import to_us  # noqa: E402
from partitions.sources.base import PartitionState, ReadOptions  # noqa: E402
from partitions.sources.bigtable.cursor import root_cursor  # noqa: E402
from partitions.sources.bigtable.ranges import RowRange  # noqa: E402
from partitions.sources.bigtable.reader import BigtableRead  # noqa: E402
from partitions.sources.bigtable.records import (  # noqa: E402
    GARBAGE_COLLECTION,
    USER,
    Change,
    DeleteFromColumn,
    DeleteFromFamily,
    DeleteFromRow,
    SetCell,
)
from partitions.sources.bigtable.requests import read_request  # noqa: E402

Response = bt.ReadChangeStreamResponse
TABLE = "projects/bench/instances/bench/tables/events"
OPTIONS = ReadOptions(heartbeat_ms=1000)


Segment = tuple[RowRange, list[bytes]]  # one call's partition and the messages it returned


# A busy table; one SetCell in 500 carries a value long enough to be chunked.
CONFIG = BigtableSimulatorConfig(
    seed=4, roots=8, tps=4000.0, retention=3600.0, split_every=20, merge_every=20, large_value_chance=0.002
)


def record(messages: int, over_grpc: bool) -> list[Segment]:
    """Return reads' responses (at least ``messages`` in all) of every partition of 5 s windows, as bytes.

    Over gRPC the bytes are those the client received; otherwise they come from the
    server's own stream plan, the very bytes its handler sends, at a fifth of the cost.
    """
    server = start_server(CONFIG)
    segments: list[Segment] = []
    try:
        with grpc.insecure_channel(server.emulator_host) as channel:
            call = channel.unary_stream(
                "/google.bigtable.v2.Bigtable/ReadChangeStream",
                request_serializer=bt.ReadChangeStreamRequest.serialize,
                response_deserializer=None,  # keep the bytes as they crossed the wire
            )
            model = server.tables["events"]
            start, count = datetime.now(UTC) - timedelta(minutes=50), 0
            while count < messages:
                end = start + timedelta(seconds=5)
                for partition in model.topology.live_at(to_us(start)):
                    row_range = partition_range(partition)
                    if over_grpc:
                        request = read_request(TABLE, "default", row_range, [], start, end, OPTIONS)
                        segments.append((row_range, list(call(request))))
                    else:
                        segments.append((row_range, _planned(model, partition, start, end)))
                    count += len(segments[-1][1])
                start = end
    finally:
        server.stop(grace=0)
    return segments


def _planned(model, partition, start: datetime, end: datetime) -> list[bytes]:
    """Return the messages the server sends for a read of a partition from start to end."""
    progress = Progress.at(partition.lo, partition.hi, to_us(start) - 1)
    items = plan_read(model, partition.lo, partition.hi, progress, to_us(end), OPTIONS.heartbeat_ms * 1000)
    return [message for item in items for message in item.messages]


def cdcweb(segments: list[Segment]) -> tuple[int, list]:
    """Decode as the reader does: proto-plus deserialize, unwrap, the reader's raw path."""
    deserialize, unwrap = Response.deserialize, Response.pb
    items = []
    for row_range, messages in segments:
        on_response = _reader(row_range).on_response
        items += [on_response(unwrap(deserialize(m))) for m in messages]
    return _mods(items)


def raw(segments: list[Segment]) -> tuple[int, list]:
    """Decode straight from bytes to raw protobuf, then the reader's path."""
    parse = Response.pb().FromString
    items = []
    for row_range, messages in segments:
        on_response = _reader(row_range).on_response
        items += [on_response(parse(m)) for m in messages]
    return _mods(items)


def _reader(row_range: RowRange) -> BigtableRead:
    """Return a reader of one partition; only its decode path is used, never its client."""
    start = datetime.now(UTC)
    state = PartitionState("bench", start, start, root_cursor(row_range))
    return BigtableRead(None, TABLE, "default", state, None, OPTIONS)


def _mods(items: list) -> tuple[int, list]:
    changes = [i for i in items if isinstance(i, Change)]
    return sum(len(c.mods) for c in changes), changes


class ProtoPlusAssembler:
    """The same reassembly, written against the proto-plus wrappers as a client user would."""

    def __init__(self):
        self.pending = None

    def feed(self, response) -> Change | None:
        """Take one proto-plus response; return a finished change."""
        if "data_change" not in response:
            if "heartbeat" in response:
                _ = (response.heartbeat.continuation_token.token, response.heartbeat.estimated_low_watermark)
            return None
        dc = response.data_change
        if self.pending is None:
            kind = USER if dc.type_ == Response.DataChange.Type.USER else GARBAGE_COLLECTION
            self.pending = [
                dc.row_key,
                dc.commit_timestamp,
                dc.tiebreaker,
                kind,
                dc.source_cluster_id,
                [],
                None,
            ]
        for chunk in dc.chunks:
            self._chunk(chunk)
        if not dc.done:
            return None
        row_key, commit, tiebreaker, kind, cluster, mods, _ = self.pending
        self.pending = None
        return Change(
            row_key, commit, tiebreaker, kind, cluster, tuple(mods), dc.token, dc.estimated_low_watermark
        )

    def _chunk(self, chunk) -> None:
        mods, cell = self.pending[5], self.pending[6]
        mutation = chunk.mutation
        if cell is not None:  # the rest of a chunked value
            cell[3].append(mutation.set_cell.value)
            if chunk.chunk_info.last_chunk:
                mods.append(SetCell(cell[0], cell[1], cell[2], b"".join(cell[3])))
                self.pending[6] = None
        elif "set_cell" in mutation:
            sc = mutation.set_cell
            if "chunk_info" in chunk:
                self.pending[6] = [sc.family_name, sc.column_qualifier, sc.timestamp_micros, [sc.value]]
            else:
                mods.append(SetCell(sc.family_name, sc.column_qualifier, sc.timestamp_micros, sc.value))
        elif "delete_from_column" in mutation:
            d = mutation.delete_from_column
            tr = d.time_range
            mods.append(
                DeleteFromColumn(
                    d.family_name, d.column_qualifier, tr.start_timestamp_micros, tr.end_timestamp_micros
                )
            )
        elif "delete_from_family" in mutation:
            mods.append(DeleteFromFamily(mutation.delete_from_family.family_name))
        else:
            mods.append(DeleteFromRow())


def client(segments: list[Segment]) -> tuple[int, list]:
    """Decode with the client's default proto-plus handling."""
    deserialize = Response.deserialize
    items = []
    for _, messages in segments:
        feed = ProtoPlusAssembler().feed
        items += [feed(deserialize(m)) for m in messages]
    return _mods(items)


def best_rate(decode, segments: list[Segment], repeats: int) -> tuple[float, int, list[int]]:
    """Return the best mods per CPU second over the repeats, the mods, and a digest per change decoded.

    CPU time of this process, not wall time: the machine is shared, and another
    process's work must not count as this decoder's. Only digests are kept, and the
    heap is collected before each run, so a later decoder does not pay for the garbage
    collector walking an earlier one's results.
    """
    best, mods, digests = float("inf"), 0, []
    for _ in range(repeats):
        gc.collect()
        began = time.process_time()
        mods, changes = decode(segments)
        best = min(best, time.process_time() - began)
        digests = [hash((c.row_key, c.mods, c.token)) for c in changes]
        del changes
    return mods / best, mods, digests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--over-grpc", action="store_true", help="record through a gRPC channel (slower)")
    args = parser.parse_args()
    began, cpu = time.perf_counter(), time.process_time()
    segments = record(args.messages, args.over_grpc)
    count, size = sum(len(m) for _, m in segments), sum(len(b) for _, m in segments for b in m)
    print(f"recorded {count:,} messages ({size / 1e6:.1f} MB) in {time.perf_counter() - began:.1f} s")
    a, _, theirs = best_rate(client, segments, args.repeats)
    b, mods, ours = best_rate(cdcweb, segments, args.repeats)
    c, _, raws = best_rate(raw, segments, args.repeats)
    assert ours == theirs == raws, "the decoders disagree"
    print(f"{len(ours):,} changes, {mods:,} mods; the decoders agree")
    print(f"client proto-plus decode + walk     {a:>12,.0f} mods/s (CPU)")
    print(f"cdcweb reader (deserialize + .pb()) {b:>12,.0f} mods/s (CPU)")
    print(f"cdcweb reader on FromString         {c:>12,.0f} mods/s (CPU)")
    print(f"ratio cdcweb/client = {b / a:.2f}x (FromString: {c / a:.2f}x)")
    print(f"run: {time.perf_counter() - began:.0f} s wall, {time.process_time() - cpu:.0f} s CPU")


if __name__ == "__main__":
    main()
