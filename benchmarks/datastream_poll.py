"""Datastream polling: one cycle over many streams, its wall time and its RPC count.

Against the Datastream simulator (a `manage.py datastream_simulator` subprocess by
default, or in this process with --in-process so its request log can confirm the count),
through cdcweb's Poller and the official clients, after one warm-up cycle:
  (a) states and errors only: one ListStreams for the location;
  (b) (a) plus objects on a staggered cadence (--objects-every cycles per stream);
  (c) (a) plus metrics: four ListTimeSeries, one per metric type, for every stream at once;
  (d) for comparison, one GetStream per stream (what a poller without list calls costs).
The goal for a cycle: at most 2 s, and at most one RPC per stream plus list calls.

Run: .venv/bin/python benchmarks/datastream_poll.py [--streams 200] [--cycles 5] [--in-process]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from procs import free_port  # noqa: E402

from partitions.simulator.datastream.config import DatastreamSimConfig  # noqa: E402
from partitions.simulator.datastream.server import start_server  # noqa: E402
from partitions.sources.datastream.client import DatastreamApi  # noqa: E402
from partitions.sources.datastream.poll import Poller  # noqa: E402

PARENT = "projects/demo-project/locations/us-central1"
GOAL_S = 2.0


def start_subprocess(port: int, streams: int) -> subprocess.Popen:
    """Start the simulator command and wait until it answers."""
    args = [
        sys.executable,
        "manage.py",
        "datastream_simulator",
        "--port",
        str(port),
        "--streams",
        str(streams),
    ]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    banner = proc.stdout.readline()
    try:
        grpc.channel_ready_future(grpc.insecure_channel(f"127.0.0.1:{port}")).result(timeout=60)
    except grpc.FutureTimeoutError:
        proc.kill()
        raise SystemExit(f"the simulator did not start: {banner}{proc.stdout.read()}") from None
    return proc


def run(name: str, poller: Poller, names: list[str], cycles: int, server) -> dict:
    """Run one warm-up and ``cycles`` measured cycles; return the scenario's figures."""
    poller.poll(names)
    walls, rpcs, served = [], [], []
    for _ in range(cycles):
        mark = server.mark() if server else 0
        started = time.perf_counter()
        cycle = poller.poll(names)
        walls.append(time.perf_counter() - started)
        rpcs.append(cycle.rpcs)
        served.append(len(server.requests(since=mark)) if server else None)
    return {"name": name, "walls": walls, "rpcs": rpcs, "served": served}


def report(rows: list[dict], streams: int) -> bool:
    """Print one line per scenario; return whether the list-based scenarios met the goal."""
    heads = ("p50 s", "max s", "RPCs/cycle", "server log", "RPCs/stream")
    print(f"{'scenario':<44}" + "".join(f"{h:>12}" for h in heads))
    ok = True
    for row in rows:
        served = "-" if row["served"][0] is None else str(max(row["served"]))
        per_stream = max(row["rpcs"]) / streams
        walls = row["walls"]
        figures = (f"{statistics.median(walls):.3f}", f"{max(walls):.3f}", str(max(row["rpcs"])), served)
        print(f"{row['name']:<44}" + "".join(f"{f:>12}" for f in figures) + f"{per_stream:>12.3f}")
        if not row["name"].startswith("(d)"):
            ok &= max(walls) <= GOAL_S and per_stream <= 1.0
    return ok


def serve(streams: int, in_process: bool):
    """Start the simulator; return its endpoint, the in-process server (or None) and the process (or None)."""
    if in_process:
        server = start_server(DatastreamSimConfig(streams=streams))
        return server.endpoint, server, None
    port = free_port()
    return f"127.0.0.1:{port}", None, start_subprocess(port, streams)


def scenarios(api: DatastreamApi, objects_every: int) -> list[tuple[str, Poller]]:
    """Return the four pollers measured, each with its label."""
    return [
        ("(a) states + errors (ListStreams)", Poller(api)),
        (f"(b) (a) + objects every {objects_every} cycles", Poller(api, objects_every=objects_every)),
        ("(c) (a) + metrics (4 ListTimeSeries)", Poller(api, metrics_every=1)),
        ("(d) one GetStream per stream, 8 at a time", Poller(api, list_threshold=10**9)),
    ]


def main() -> None:
    """Start the simulator, measure every scenario, print the table and the verdict."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--objects-every", type=int, default=10)
    parser.add_argument("--in-process", action="store_true", help="serve in this process and check its log")
    args = parser.parse_args()
    endpoint, server, proc = serve(args.streams, args.in_process)
    try:
        api = DatastreamApi(endpoint, endpoint)
        names = [f"{PARENT}/streams/stream-{i:03d}" for i in range(args.streams)]
        where = "in this process" if server else "in a subprocess"
        print(
            f"Datastream poll: {args.streams} streams, simulator {where} on {endpoint}, {args.cycles} cycles"
        )
        rows = [
            run(label, poller, names, args.cycles, server)
            for label, poller in scenarios(api, args.objects_every)
        ]
        verdict = "met" if report(rows, args.streams) else "MISSED"
        print(f"goal for (a)-(c): <= {GOAL_S:g} s a cycle, <= 1 RPC per stream plus list calls: {verdict}")
    finally:
        if server is not None:
            server.stop()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
