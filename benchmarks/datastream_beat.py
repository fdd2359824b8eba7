"""One beat cycle over 200 watched Datastream streams, written to the database (issue 19's goal).

Against the Datastream simulator in this process (so its request log counts every call),
with cdcweb's real polling code (partitions/watch/polling.py: the official clients, the
Poller, then the batched writes) on a fresh embedded PostgreSQL in a temporary
CDC_VAR_DIR. The location's streams are imported first, then one warm-up cycle runs.
Measured, per cycle, wall time from the start of the calls to the last row written:
  (a) a steady cycle: states, errors and metrics of every stream, the objects of every
      CDC_WATCH_OBJECTS_EVERY-th stream (6 by default), as beat runs it;
  (b) the same after the simulator's clock jumped 60 s, so many streams moved state and
      raised or cleared errors (transitions and errors written);
  (c) every stream's objects read and written in one cycle (the worst case).
The goal: at most 2 s, with at most one GetStream per stream per cycle plus list calls.

Run: flock /tmp/cdcweb-heavy.lock .venv/bin/python benchmarks/datastream_beat.py [--streams 200] [--cycles 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOAL_S = 2.0


def setup(var_dir: Path, endpoint: str) -> None:
    """Point Django at a fresh embedded PostgreSQL in var_dir and the clients at the simulator; migrate."""
    os.environ.update(
        CDC_VAR_DIR=str(var_dir), DATASTREAM_API_ENDPOINT=endpoint, MONITORING_API_ENDPOINT=endpoint
    )
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
    from cdcweb import embedded_db

    embedded_db.ensure_running(var_dir)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def measure(name: str, server, cycles: int, objects: bool = False, jump: float = 0.0) -> dict:
    """Run `cycles` polling cycles; return their times, calls and what they wrote."""
    from partitions.watch.polling import poll_watched

    times, calls, reports = [], Counter(), []
    for _ in range(cycles):
        if jump:
            server.clock.advance(jump)
        mark = server.mark()
        started = time.perf_counter()
        report = poll_watched(objects=objects)
        times.append(time.perf_counter() - started)
        calls.update(r.method for r in server.requests(since=mark))
        reports.append(report)
    return {
        "name": name,
        "median_s": statistics.median(times),
        "max_s": max(times),
        "calls_per_cycle": {m: n / cycles for m, n in sorted(calls.items())},
        "moved_per_cycle": sum(r.moved for r in reports) / cycles,
        "errors_per_cycle": sum(r.errors for r in reports) / cycles,
        "objects_per_cycle": sum(r.objects for r in reports) / cycles,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    from partitions.simulator.datastream.config import DatastreamSimConfig, SimClock
    from partitions.simulator.datastream.server import start_server

    config = DatastreamSimConfig(seed=19, streams=args.streams, cycle=1800.0, metric_step=10.0)
    server = start_server(config, clock=SimClock())
    var_dir = Path(tempfile.mkdtemp(prefix="cdcweb-ds-bench-"))
    try:
        setup(var_dir, server.endpoint)
        from partitions.watch.importing import import_streams
        from partitions.watch.polling import poll_watched

        started = time.perf_counter()
        imported = import_streams(config.project, config.location)
        print(f"imported {len(imported.created)} streams in {time.perf_counter() - started:.3f} s")
        poll_watched(objects=True)  # warm-up: clients, channels, the first objects
        results = [
            measure("(a) steady", server, args.cycles),
            measure("(b) after a 60 s jump", server, args.cycles, jump=60.0),
            measure("(c) every stream's objects", server, args.cycles, objects=True),
        ]
        for r in results:
            verdict = "meets" if r["max_s"] <= GOAL_S else "MISSES"
            print(
                f"{r['name']}: median {r['median_s']:.3f} s, max {r['max_s']:.3f} s "
                f"({verdict} the {GOAL_S:g} s goal); "
                f"moves {r['moved_per_cycle']:.1f}, new errors {r['errors_per_cycle']:.1f}, "
                f"objects {r['objects_per_cycle']:.0f} per cycle; calls per cycle {r['calls_per_cycle']}"
            )
            assert r["calls_per_cycle"].get("GetStream", 0) <= args.streams
    finally:
        server.stop()
        from cdcweb import embedded_db

        embedded_db.stop(var_dir)


if __name__ == "__main__":
    main()
