"""`make demo`'s lag: from a 30-minute backlog to the live edge, then held there.

Runs the demo exactly as `make demo` does (`python -m cdcweb.demo`: the Procfile's
simulator, reader, housekeeping, reports and alerts workers, beat and web server, on the
embedded defaults) in a fresh CDC_VAR_DIR, and every 10 s reads each demo stream's lag
as the dashboard computes it. It prints when each stream first fell under 30 s and the
worst lag of the following `--hold` minutes, and checks that beat stored a lag sample
in every 10 s interval (the charts' points).

Goal (issue 9): under 30 s within 3 minutes, and under 30 s for the next 10 minutes.
Ports 8000 and 9010 must be free (the demo's own).

Run: .venv/bin/python benchmarks/demo_lag.py [--hold 10]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PERIOD = 10.0
GOAL_S, WITHIN_S = 30.0, 180.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", type=float, default=10.0, help="minutes to watch after the first 3")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    var = Path(tempfile.mkdtemp(prefix="cdc-demo-"))
    env = {**os.environ, "CDC_VAR_DIR": str(var), "PYTHONUNBUFFERED": "1"}
    log = open(var / "demo.log", "w")  # noqa: SIM115 - lives as long as the demo
    demo = subprocess.Popen([sys.executable, "-m", "cdcweb.demo"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    began = time.monotonic()
    try:
        rows = watch(var, began, WITHIN_S + args.hold * 60)
        gaps = sample_gaps(began)
    finally:
        os.killpg(demo.pid, signal.SIGINT)
        try:
            demo.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
    report(rows, gaps, args.hold)


def watch(var: Path, began: float, seconds: float) -> list[tuple[float, dict[str, float | None]]]:
    """Return (seconds since start, {stream: lag}) every PERIOD seconds."""
    os.environ.update({"CDC_VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "cdcweb.settings"})
    sys.path.insert(0, str(ROOT))
    time.sleep(8)  # the demo migrates and registers its streams first
    import django

    django.setup()
    from partitions.progress import progress_of
    from streams.models import Stream

    rows = []
    tick = began + 10
    while time.monotonic() - began < seconds:
        time.sleep(max(0.0, tick - time.monotonic()))
        tick += PERIOD
        streams = list(Stream.objects.order_by("name"))
        progress = progress_of(streams)  # the dashboard's, the API's and /metrics' lag
        lags = {s.name: progress[s.pk].lag_seconds for s in streams}
        rows.append((time.monotonic() - began, lags))
        print(f"{rows[-1][0]:6.0f}s  " + "  ".join(f"{n} {_fmt(v)}" for n, v in lags.items()), flush=True)
    return rows


def sample_gaps(began: float) -> dict[str, float]:
    """Return, per stream, the longest gap between the lag samples beat stored once it caught up."""
    from datetime import timedelta

    from django.utils import timezone

    from partitions.models import LagSample
    from streams.models import Stream

    since = timezone.now() - timedelta(seconds=time.monotonic() - began - WITHIN_S)
    gaps = {}
    for stream in Stream.objects.all():
        times = list(LagSample.objects.filter(stream=stream, at__gte=since).values_list("at", flat=True))
        gaps[stream.name] = max(
            ((b - a).total_seconds() for a, b in zip(times, times[1:], strict=False)), default=0
        )
    return gaps


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:6.1f}s"


def report(rows, gaps: dict[str, float], hold: float) -> None:
    names = sorted({n for _, lags in rows for n in lags})
    print(f"\nmake demo (30-minute backlog), lag every {PERIOD:g} s for {WITHIN_S / 60 + hold:g} min:")
    for name in names:
        under = next((t for t, lags in rows if lags.get(name) is not None and lags[name] < GOAL_S), None)
        after = [lags.get(name) for t, lags in rows if t > WITHIN_S]
        present = all(v is not None for v in after)
        worst = max((v for v in after if v is not None), default=float("nan"))
        print(f"  {name}: under {GOAL_S:g} s after {_fmt(under)} (goal <= {WITHIN_S:g} s);"
              f" worst of the next {hold:g} min {worst:.1f} s (goal < {GOAL_S:g} s);"
              f" every sample present: {present}; longest gap between stored lag samples"
              f" {gaps.get(name, float('nan')):.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
