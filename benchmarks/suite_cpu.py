"""Where `make test`'s time goes: each test module's wall time and CPU time, and each worker's.

A pytest plugin and its report in one file. As a plugin it appends a line per test
module to ``$SUITE_CPU_OUT`` (default ``var/suite_cpu.jsonl``): the module, the xdist
worker that ran it, its wall time, and the CPU time (user + system) that the worker's
process and all its descendants (servers, Celery workers, ``spark-submit`` and its JVMs)
spent meanwhile, read from /proc at each module boundary. A module's fixtures torn down
at its end count to it. Children reaped by their parent count through ``cutime``; a
process left orphaned is lost. Linux only. As a script it prints the modules, slowest
first, with each worker's totals (docs/benchmarks.md, issue 22, goal 6).

Run: SUITE_CPU_OUT=var/suite_cpu.jsonl PYTHONPATH=benchmarks .venv/bin/python -m pytest \\
         -n 2 --dist loadgroup --no-loadscope-reorder -p suite_cpu -q
     .venv/bin/python benchmarks/suite_cpu.py var/suite_cpu.jsonl [--top 40]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "var" / "suite_cpu.jsonl"


def _stat(pid: str) -> tuple[int, int, int]:
    """Return (parent pid, own CPU ticks, reaped children's CPU ticks) of a process."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def tree_cpu_seconds(root: int) -> float:
    """Return the CPU seconds of process ``root``, its reaped children and its live descendants."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    ticks: dict[int, int] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            parent, own, reaped = _stat(pid)
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children[parent].append(int(pid))
        ticks[int(pid)] = own + reaped
    total, stack = ticks.get(root, 0), list(children[root])
    while stack:
        pid = stack.pop()
        total += ticks.get(pid, 0)
        stack.extend(children[pid])
    return total / CLOCK_TICKS


class _Recorder:
    def __init__(self, out: Path):
        self.out, self.module, self.wall, self.cpu = out, None, 0.0, 0.0

    def boundary(self, module: str | None) -> None:
        wall, cpu = time.monotonic(), tree_cpu_seconds(os.getpid())
        if self.module is not None:
            line = {"module": self.module, "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                    "wall": round(wall - self.wall, 3), "cpu": round(cpu - self.cpu, 3)}  # fmt: skip
            self.out.parent.mkdir(parents=True, exist_ok=True)
            with self.out.open("a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")
        self.module, self.wall, self.cpu = module, wall, cpu


_recorder = _Recorder(Path(os.environ.get("SUITE_CPU_OUT") or DEFAULT_OUT))


def pytest_runtest_protocol(item, nextitem):
    """Close the last module's line as the first test of the next module starts."""
    module = item.nodeid.split("::", 1)[0]
    if module != _recorder.module:
        _recorder.boundary(module)


def pytest_sessionfinish(session):
    if _recorder.module is not None:
        _recorder.boundary(None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    lines = [json.loads(text) for text in args.file.read_text().splitlines() if text.strip()]
    by_worker = collections.defaultdict(list)
    for line in lines:
        by_worker[line["worker"]].append(line)
    for worker, done in sorted(by_worker.items()):
        wall, cpu = sum(d["wall"] for d in done), sum(d["cpu"] for d in done)
        print(f"{worker}: {len(done)} modules, {wall:.0f} s wall, {cpu:.0f} CPU-s ({cpu / wall:.2f} cores)")
    print(f"\n{'wall s':>8} {'CPU-s':>8} {'cores':>6}  worker  module")
    for line in sorted(lines, key=lambda d: -d["wall"])[: args.top]:
        cores = line["cpu"] / max(line["wall"], 0.001)
        print(f"{line['wall']:8.1f} {line['cpu']:8.1f} {cores:6.2f}  {line['worker']:>6}  {line['module']}")


if __name__ == "__main__":
    main()
