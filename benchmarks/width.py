"""Width: how many live partitions one reader host follows, and what it costs in lag and memory.

Starts the simulator serving S databases, each with one change stream of P fixed
partitions (no splits or merges, a few records a minute per partition, heartbeats every
2 s), and the Procfile's reader (one process per core, as `make demo` runs it), housekeeping
worker and beat at their defaults, all on the
embedded defaults in a fresh CDC_VAR_DIR. It registers one stream per database starting a
minute in the past, waits `--warmup` minutes, then for `--minutes` reads every stream's lag
every 5 s (as the dashboard computes it) and the reader's memory (RSS of the worker and its
children). It prints each size's worst stream lag p99 and max, and the reader's peak RSS.

With several `--partitions` totals it runs each in turn and writes a Plotly page of lag and
RSS against partitions (docs/width.html, reading plotly.min.js from static/vendor).

Goal (issue 22): 2,000 live partitions on one 2-core host, every stream's lag p99 <= 10 s
over 10 minutes, RSS <= 2 GiB, with no setting raised to the partition count.

Run: .venv/bin/python benchmarks/width.py --partitions 100 500 2000 [--per-stream 100]
     [--minutes 10] [--warmup 2] [--readers N] [--plot docs/width.html]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from procs import Deployment  # noqa: E402

from cdcweb.demo import reader_processes  # noqa: E402

SAMPLE_SECONDS = 5.0
HEARTBEAT_MS = 2000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, nargs="+", default=[2000], help="live partitions in all")
    parser.add_argument("--per-stream", type=int, default=100, help="partitions of each stream")
    parser.add_argument("--minutes", type=float, default=10.0, help="minutes measured after the warm-up")
    parser.add_argument("--warmup", type=float, default=2.0, help="minutes to reach the live edge first")
    parser.add_argument("--records-per-minute", type=float, default=3.0, help="per partition")
    readers = "reader processes (RSS: their sum); default CDC_READERS or one per core"
    parser.add_argument("--readers", type=int, default=reader_processes(), help=readers)
    parser.add_argument("--plot", default="", help="write a Plotly page of lag and RSS here")
    parser.add_argument("--profile", default="", help="py-spy record the reader into this SVG")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: one size, JSON out
    return parser.parse_args()


class Host(Deployment):
    """One reader host on the embedded defaults: simulator, reader, housekeeping, beat."""

    def __init__(self, args: argparse.Namespace, total: int):
        super().__init__(f"cdc-width-{total}-")
        self.args, self.total = args, total
        self.streams = max(1, total // args.per_stream)
        self.reader = None

    def start(self) -> None:
        """Start the simulator and the Procfile's processes; register and start the streams."""
        per = self.args.per_stream
        # A transaction touches about 2.5 of a stream's partitions (1 to 4 keys).
        tps = max(0.05, self.args.records_per_minute * per / 60 / 2.5)
        databases = [arg for i in range(self.streams) for arg in ("--database", f"db{i}")]
        epoch = (datetime.now(UTC) - timedelta(minutes=10)).replace(second=0, microsecond=0)
        self.simulator(
            *databases, "--roots", str(per), "--split-every", "100000d", "--merge-every", "100000d",
            "--tps", f"{tps:.3f}", "--epoch", epoch.isoformat(),
            timeout=120,
        )  # fmt: skip
        self.manage("migrate", "--no-input")
        self.reader = self.procfile(readers=self.args.readers)
        # Every stream through the CLI's own command, in one process (one start-up, not 2 x S):
        # all created first, then all started, each from one minute before the first start.
        start = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
        calls = [
            f"call_command('cdc_stream', 'create', 's{i}', '--project', 'w', '--instance', 'w', "
            f"'--database', 'db{i}', '--change-stream', 'Changes', '--start', '{start}', "
            f"'--heartbeat-ms', '{HEARTBEAT_MS}')"
            for i in range(self.streams)
        ] + [f"call_command('cdc_stream', 'start', 's{i}')" for i in range(self.streams)]
        script = "\n".join(["from django.core.management import call_command", *calls])
        self.manage("shell", "-c", script)

    def rss(self) -> int:
        """Return the readers' resident memory, children included (bytes)."""
        total = 0
        for reader in self.readers:
            try:
                leader = psutil.Process(reader.pid)
                total += sum(p.memory_info().rss for p in [leader, *leader.children(recursive=True)])
            except psutil.NoSuchProcess:
                pass
        return total

    def stop(self) -> None:
        self.procs.stop(timeout=30)
        self.procs.run_module("cdcweb.dbserver", "stop", str(self.var))


def lags(host: Host) -> dict[str, float | None]:
    """Return every stream's lag now, as the dashboard reads it (one query)."""
    from django.db import connections

    from partitions.progress import progress_of
    from streams.models import Stream

    connections.close_all()  # each size runs on its own embedded database
    streams = list(Stream.objects.all())
    found = progress_of(streams)
    return {s.name: found[s.pk].lag_seconds for s in streams}


def run_size(args: argparse.Namespace, total: int) -> dict:
    """Run one size; return its figures."""
    host = Host(args, total)
    profiler = None
    try:
        host.start()
        host.setup_django()
        warm_until = time.monotonic() + args.warmup * 60
        while time.monotonic() < warm_until:
            time.sleep(SAMPLE_SECONDS)
            print(f"  warm-up {total}: {_worst(lags(host))}", flush=True)
        if args.profile:
            profiler = host.procs.spawn("py-spy", str(Path(sys.executable).with_name("py-spy")), "record",
                                        "--pid", str(host.reader.pid), "--duration", "60", "--rate", "50",
                                        "--output", args.profile, "--nonblocking")  # fmt: skip
        series: dict[str, list[float]] = {}
        peak, began = 0, time.monotonic()
        while time.monotonic() - began < args.minutes * 60:
            time.sleep(SAMPLE_SECONDS)
            now = lags(host)
            for name, lag in now.items():
                series.setdefault(name, []).append(float("inf") if lag is None else lag)
            peak = max(peak, host.rss())
            print(f"  {time.monotonic() - began:5.0f}s {total}: {_worst(now)}  rss {peak / 2**20:,.0f} MiB",
                  flush=True)  # fmt: skip
        if profiler is not None:
            profiler.wait(timeout=120)
    finally:
        host.stop()
    p99 = {name: _percentile(values, 0.99) for name, values in series.items()}
    return {
        "partitions": total,
        "streams": host.streams,
        "worst_p99": max(p99.values()),
        "median_p99": statistics.median(p99.values()),
        "worst_max": max(max(v) for v in series.values()),
        "peak_rss_mib": peak / 2**20,
        "samples": sum(len(v) for v in series.values()),
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _worst(now: dict[str, float | None]) -> str:
    known = [v for v in now.values() if v is not None]
    return f"{len(now)} streams, worst lag {max(known):.1f} s" if known else f"{len(now)} streams, no lag yet"


def child(total: int) -> dict:
    """Run one size in a process of its own; return its figures."""
    # The child measures one size: without --partitions' list nor --plot (flags and values).
    argv = _without(sys.argv[1:], "--partitions") + ["--partitions", str(total), "--one"]
    proc = subprocess.Popen([sys.executable, __file__, *argv], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    result = None
    for line in proc.stdout:
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
        else:
            print(line, end="", flush=True)
    if proc.wait() or result is None:
        raise SystemExit(f"the run of {total} partitions failed")
    return result


def _without(argv: list[str], option: str) -> list[str]:
    """Return argv without `option` and the values that follow it."""
    out, skipping = [], False
    for arg in argv:
        if arg.startswith("--"):
            skipping = arg == option or arg == "--plot"
        if not skipping:
            out.append(arg)
    return out


def plot(rows: list[dict], path: str) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    x = [r["partitions"] for r in rows]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=x, y=[r["worst_p99"] for r in rows], name="worst stream lag p99 (s)"))
    fig.add_trace(
        go.Scatter(x=x, y=[r["peak_rss_mib"] for r in rows], name="reader RSS (MiB)"), secondary_y=True
    )
    fig.update_layout(
        title="One reader host: lag and memory against live partitions", xaxis_title="partitions"
    )
    fig.update_yaxes(title_text="lag p99 (s)", secondary_y=False)
    fig.update_yaxes(title_text="RSS (MiB)", secondary_y=True)
    fig.write_html(path, include_plotlyjs="../static/vendor/plotly.min.js")


def main() -> None:
    args = parse_args()
    # A SIGTERM (Ctrl-C's cousin from a script) unwinds like one, so every size's processes
    # and its database are stopped, not left running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.one:  # Django's settings (the embedded database's folder) are fixed per process
        print("RESULT " + json.dumps(run_size(args, args.partitions[0])), flush=True)
        return
    rows = []
    for total in args.partitions:
        print(
            f"{total} live partitions ({total // args.per_stream} streams x {args.per_stream}):", flush=True
        )
        rows.append(child(total))
    print(f"\nwidth, {args.minutes:g} min measured after {args.warmup:g} min, heartbeats {HEARTBEAT_MS} ms, "
          f"{args.records_per_minute:g} records/min per partition, CDC_READ_THREADS="
          f"{os.environ.get('CDC_READ_THREADS', '32')}:")  # fmt: skip
    for r in rows:
        print(f"  {r['partitions']:>5} partitions ({r['streams']} streams): worst stream lag p99 "
              f"{r['worst_p99']:.1f} s (median stream {r['median_p99']:.1f} s, worst max "
              f"{r['worst_max']:.1f} s), reader peak RSS {r['peak_rss_mib']:,.0f} MiB "
              f"({args.readers} reader process{'es' if args.readers > 1 else ''})")  # fmt: skip
    print(json.dumps(rows))
    if args.plot:
        plot(rows, args.plot)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
