"""Reader throughput: the client's default decode vs cdcweb's reader vs the tail tool.

For each dialect, over the same 10-minute backlog of the simulator:
  (a) the official client's default decode (lazy_decode=False) of the recorded
      PartialResultSet messages, in process, rows discarded;
  (b) cdcweb's reader path (lazy_decode=True + the change record decoders) turning the
      same messages into typed records;
  (c) `manage.py tail_change_stream` end to end over gRPC (all partitions, parent before
      child), with the simulator's own serve rate (bytes received, nothing decoded) beside it.
All rates are data change records per second. Both (a) and (b) include deserializing the
messages, as the client's gRPC path does; they are timed in turn, best of --repeats each.

Run: .venv/bin/python benchmarks/read_throughput.py [--tps 100] [--minutes 10] [--repeats 3]
     [--profile N]  (also print (b)'s cProfile, N functions by own time, per dialect)
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
from google.cloud.spanner_v1 import CreateSessionRequest, ExecuteSqlRequest, PartialResultSet, Session
from google.cloud.spanner_v1._helpers import _make_value_pb
from google.cloud.spanner_v1.streamed import StreamedResultSet
from google.protobuf import struct_pb2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from procs import free_port  # noqa: E402

from partitions.sources.spanner_change_stream.decode import GoogleSqlDecoder  # noqa: E402
from partitions.sources.spanner_change_stream.parse import decode_postgresql_value  # noqa: E402
from partitions.sources.spanner_change_stream.query import build_query  # noqa: E402
from partitions.sources.spanner_change_stream.records import ChildPartitionsRecord, DataChangeRecord  # noqa: E402
from streams.times import format_time  # noqa: E402

DATABASES = {"googlesql": "demo-db", "postgresql": "demo-pg"}
PREFIX = "projects/bench/instances/bench/databases/"


def start_simulator(port: int, epoch: datetime, tps: float) -> subprocess.Popen:
    args = [sys.executable, "manage.py", "spanner_simulator", "--port", str(port), "--tps", str(tps)]
    args += ["--epoch", format_time(epoch), "--retention", "2h"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    banner = proc.stdout.readline()
    try:
        grpc.channel_ready_future(grpc.insecure_channel(f"127.0.0.1:{port}")).result(timeout=30)
    except grpc.FutureTimeoutError:
        proc.kill()
        raise SystemExit(f"the simulator did not start: {banner}{proc.stdout.read()}") from None
    return proc


class RawClient:
    """ExecuteStreamingSql over a plain channel, keeping each message's bytes."""

    def __init__(self, port: int, database: str):
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        create = self.channel.unary_unary(
            "/google.spanner.v1.Spanner/CreateSession",
            request_serializer=CreateSessionRequest.serialize,
            response_deserializer=Session.deserialize,
        )
        self.session = create(CreateSessionRequest(database=PREFIX + database)).name
        self.stream = self.channel.unary_stream(
            "/google.spanner.v1.Spanner/ExecuteStreamingSql",
            request_serializer=ExecuteSqlRequest.serialize,
            response_deserializer=lambda raw: raw,
        )

    def query(self, query) -> list[bytes]:
        params = struct_pb2.Struct(fields={k: _make_value_pb(v) for k, v in query.params.items()})
        request = ExecuteSqlRequest(
            session=self.session, sql=query.sql, params=params, param_types=query.param_types
        )
        return list(self.stream(request))


def decoder(dialect: str):
    return GoogleSqlDecoder().decode if dialect == "googlesql" else decode_postgresql_value


def messages(recorded: list[bytes]):
    return (PartialResultSet.deserialize(raw) for raw in recorded)


def record_backlog(client: RawClient, dialect: str, start: datetime, end: datetime):
    """Return every query's messages of [start, end], the data record count, serve seconds."""
    decode = decoder(dialect)
    todo, seen, recorded, served, data = [(None, start)], set(), [], 0.0, 0
    while todo:
        token, begin = todo.pop()
        query = build_query(dialect, "Changes", begin, end, token, 10_000)
        started = time.perf_counter()
        msgs = client.query(query)
        served += time.perf_counter() - started
        recorded.append(msgs)
        for row in StreamedResultSet(messages(msgs), lazy_decode=True):
            record = decode(row[0], token)
            if isinstance(record, DataChangeRecord):
                data += 1
            elif isinstance(record, ChildPartitionsRecord):
                for child in record.child_partitions:
                    if child.token not in seen:
                        seen.add(child.token)
                        todo.append((child.token, record.start_timestamp))
    return recorded, data, served


def default_decode(recorded, dialect) -> None:
    for msgs in recorded:
        for _row in StreamedResultSet(messages(msgs), lazy_decode=False):
            pass


def reader_decode(recorded, dialect) -> None:
    decode = decoder(dialect)
    for msgs in recorded:
        for row in StreamedResultSet(messages(msgs), lazy_decode=True):
            decode(row[0], "token")


def best_seconds(runs, recorded, dialect, repeats: int) -> list[tuple[float, float]]:
    """Return each run's best wall and best CPU seconds, the runs taken in turn.

    Taking (a) and (b) in turn, rather than all of (a) then all of (b), puts both under
    the same machine state: on a shared machine the rates of either drift by 20 % from
    one minute to the next, which one-after-the-other best-ofs turned into the ratio.
    """
    best = [(float("inf"), float("inf")) for _ in runs]
    for _ in range(repeats):
        for index, run in enumerate(runs):
            wall, cpu = time.perf_counter(), time.process_time()
            run(recorded, dialect)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best[index] = (min(best[index][0], wall), min(best[index][1], cpu))
    return best


def print_profile(recorded, dialect: str, top: int) -> None:
    """Print the functions of one (b) pass that take the most time of their own."""
    profile = cProfile.Profile()
    profile.runcall(reader_decode, recorded, dialect)
    print(f"{dialect}: cProfile of (b), by own time")
    pstats.Stats(profile, stream=sys.stdout).strip_dirs().sort_stats("tottime").print_stats(top)


def tail_rate(port: int, dialect: str, start: datetime, end: datetime) -> tuple[int, float]:
    args = [sys.executable, "manage.py", "tail_change_stream", "--project", "bench", "--instance", "bench"]
    args += ["--database", DATABASES[dialect], "--stream", "Changes", "--emulator-host", f"127.0.0.1:{port}"]
    args += ["--start", format_time(start), "--end", format_time(end)]
    started = time.perf_counter()
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True, env=os.environ)
    wall = time.perf_counter() - started
    summary = dict(item.split("=") for item in out.stderr.split())
    return int(summary["data_records"]), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tps", type=float, default=100.0)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print (b)'s top N functions")
    args = parser.parse_args()
    epoch = (datetime.now(UTC) - timedelta(minutes=args.minutes + 20)).replace(microsecond=0)
    start = epoch + timedelta(minutes=5)
    end = start + timedelta(minutes=args.minutes)
    port = free_port()
    sim = start_simulator(port, epoch, args.tps)
    lines = []
    try:
        for dialect in ("googlesql", "postgresql"):
            client = RawClient(port, DATABASES[dialect])
            record_backlog(client, dialect, start, end)  # warm the simulator's caches
            recorded, data, served = record_backlog(client, dialect, start, end)
            (a_wall, a_cpu), (b_wall, b_cpu) = best_seconds(
                [default_decode, reader_decode], recorded, dialect, args.repeats
            )
            a, b = data / a_wall, data / b_wall
            if args.profile:
                print_profile(recorded, dialect, args.profile)
            tailed, wall = tail_rate(port, dialect, start, end)
            assert tailed == data, f"tail read {tailed} data records, the backlog holds {data}"
            c = data / wall
            print(f"{dialect}: {data:,} data change records in {len(recorded)} queries")
            print(f"  (a) client default decode      {a:>10,.0f} records/s")
            print(f"  (b) cdcweb reader decode       {b:>10,.0f} records/s")
            print(f"      CPU per record: (a) {a_cpu / data * 1e6:.2f} us, (b) {b_cpu / data * 1e6:.2f} us")
            print(f"  (c) tail_change_stream (gRPC)  {c:>10,.0f} records/s ({wall:.2f} s incl. start-up)")
            print(f"      simulator serve rate       {data / served:>10,.0f} records/s")
            lines.append(f"{dialect} b/a={b / a:.2f} c/a={c / a:.2f} b/a in CPU time={a_cpu / b_cpu:.2f}")
    finally:
        sim.terminate()
        sim.wait(timeout=10)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
