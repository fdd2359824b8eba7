"""Benchmark the whole Spark report over 1M and 10M landed mods, beside one pandas process.

For each size: generate the landing zone under ./var/bench/ if absent
(benchmarks/make_landing.py), run ``spark-submit spark_tasks/main.py`` in local[*] and
sample the driver JVM's and the Python driver's resident memory through /proc, then
compute the throughput report with pandas in a child process (peak RSS from wait4).
Goals (issue 5): 10M in <= 3 minutes, seconds per million at 10M no worse than at 1M,
driver peak memory flat as the input grows tenfold.

    .venv/bin/python benchmarks/spark_report.py [--sizes 1000000 10000000] [--no-pandas]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from partitions.sources.landing import stream_dir  # noqa: E402
from spark_tasks.submit import (  # noqa: E402
    CDS_DIR,
    DRIVER_JAVA_OPTIONS,
    DRIVER_MEMORY,
    SUBMIT_ENV,
    submit_options,
)

BENCH = ROOT / "var" / "bench"
STREAM, STREAM_ID = "bench", 1  # make_landing.py lands it under stream_id=1
PAGE = os.sysconf("SC_PAGE_SIZE")


def tree(pid: int) -> list[tuple[int, int]]:
    """Return (pid, parent pid) of pid and all its descendants (pid's own parent as 0)."""
    out, todo = [], [(pid, 0)]
    while todo:
        p, parent = todo.pop()
        out.append((p, parent))
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo += [(int(c), p) for c in (task / "children").read_text().split()]
    return out


def rss_by_kind(pid: int) -> dict[str, int]:
    """Return resident bytes of the tree's driver JVM and Python driver.

    A process whose parent is of its own kind is left out: the JVM starts helpers
    (Hadoop's local file system runs ``chmod``/``stat``; Python workers) through
    vfork, and until the child execs, /proc shows it as a second ``java`` with the
    parent's whole resident size. Counting those doubled the JVM's figure whenever
    the sampler caught one (1.1 vs 2.0 GiB on identical runs).
    """
    exes, pages = {}, {}
    nodes = tree(pid)
    for p, _ in nodes:
        try:
            exes[p] = Path(f"/proc/{p}/exe").resolve().name
            pages[p] = int(Path(f"/proc/{p}/statm").read_text().split()[1])
        except OSError:
            continue
    kind_of = lambda p: next((k for k in ("java", "python") if exes.get(p, "").startswith(k)), None)  # noqa: E731
    sizes = {"java": 0, "python": 0}
    for p, parent in nodes:
        kind = kind_of(p)
        if kind and p in pages and kind_of(parent) != kind:
            sizes[kind] += pages[p] * PAGE
    return sizes


def children_cpu() -> float:
    """Return user+sys CPU seconds of this process's waited-for descendants so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_sampled(cmd: list[str], env: dict) -> tuple[subprocess.CompletedProcess, float, dict[str, int]]:
    """Run cmd, sampling its process tree's memory every 0.2 s; return result, seconds, peaks.

    ``peaks["cpu_seconds"]`` is the tree's user+sys time (the JVM waits for its Python
    driver, so RUSAGE_CHILDREN covers both): on a shared machine it is the figure that
    load from other jobs does not inflate.
    """
    began, cpu_before = time.monotonic(), children_cpu()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks = {"java": 0, "python": 0}

    def sample() -> None:
        while proc.poll() is None:
            for kind, size in rss_by_kind(proc.pid).items():
                peaks[kind] = max(peaks[kind], size)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    seconds = time.monotonic() - began
    sampler.join()
    peaks["cpu_seconds"] = children_cpu() - cpu_before
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), seconds, peaks


def ensure_landing(mods: int) -> Path:
    """Return the landing zone of ``mods`` mods, generating it once."""
    path = BENCH / f"landing-{mods // 1_000_000}m"
    if not (path / stream_dir(STREAM_ID)).exists():  # sets made before ids were used are made anew
        cmd = [sys.executable, "benchmarks/make_landing.py", "--mods", str(mods), "--out", str(path)]
        subprocess.run(cmd, cwd=ROOT, check=True)
    return path


def run_spark(landing: Path, mods: int, args: argparse.Namespace) -> dict:
    """Run the whole report through spark-submit; return wall time and peak memory."""
    out = BENCH / f"report-{mods // 1_000_000}m"
    env = {
        **SUBMIT_ENV,
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    cmd = [
        str(Path(sys.executable).with_name("spark-submit")), "--master", args.master,
        *submit_options(args.driver_memory, args.driver_java_options, None if args.no_cds else CDS_DIR),
        "spark_tasks/main.py",
        "--input", str(landing),
        "--output", str(out), "--stream-id", str(STREAM_ID), "--stream-name", STREAM,
        "--lineage", str(landing / f"lineage-{STREAM}.json"),
    ]  # fmt: skip
    done, seconds, peaks = run_sampled(cmd, env)
    if done.returncode != 0:
        raise SystemExit(f"spark-submit failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    steps = [line for line in done.stdout.splitlines() if line.startswith("PROGRESS")]
    return {
        "wall_seconds": round(seconds, 1),
        "job_seconds": summary["elapsed_seconds"],
        "cpu_seconds": round(peaks["cpu_seconds"], 1),
        "load_average": os.getloadavg()[0],
        "driver_jvm_peak_mib": round(peaks["java"] / 2**20),
        "python_driver_peak_mib": round(peaks["python"] / 2**20),
        "mods": summary["totals"]["mods"],
        "seconds_per_million": round(seconds / (summary["totals"]["mods"] / 1e6), 2),
        "steps": steps,
        "command": " ".join(cmd),
    }


def pandas_throughput(landing: str) -> None:
    """Compute the throughput report with pandas (run in a child process); print totals."""
    import pyarrow.dataset as ds

    cols = ["partition_token", "commit_timestamp", "server_transaction_id", "record_sequence", "mod_index",
            "table_name", "mod_type", "mod_bytes"]  # fmt: skip
    df = ds.dataset(f"{landing}/{stream_dir(STREAM_ID)}", format="parquet").to_table(columns=cols).to_pandas()
    df = df.drop_duplicates(cols[:5])
    df["minute"] = df["commit_timestamp"].dt.floor("min")
    for kind in ("INSERT", "UPDATE", "DELETE"):
        df[kind] = (df["mod_type"] == kind).astype("int64")
    key = ["table_name", "minute", "server_transaction_id"]
    records = df.groupby([*cols[:4], *key[:2]], sort=False, observed=True).agg(
        mods=("mod_index", "size"), inserts=("INSERT", "sum"), updates=("UPDATE", "sum"),
        deletes=("DELETE", "sum"), bytes=("mod_bytes", "sum"),
    ).reset_index()  # fmt: skip
    per_tx = records.groupby(key, sort=False).agg(
        records=("mods", "size"), mods=("mods", "sum"), inserts=("inserts", "sum"),
        updates=("updates", "sum"), deletes=("deletes", "sum"), bytes=("bytes", "sum"),
    ).reset_index()  # fmt: skip
    table = per_tx.groupby(key[:2]).agg(
        records=("records", "sum"), mods=("mods", "sum"), bytes=("bytes", "sum"),
        transactions=("records", "size"),
    )  # fmt: skip
    print(
        json.dumps(
            {"rows": len(table), "mods": int(table["mods"].sum()), "records": int(table["records"].sum())}
        )
    )


def run_pandas(landing: Path) -> dict:
    """Run the pandas baseline in a child; return wall time and its peak RSS (wait4)."""
    began = time.monotonic()
    cmd = [sys.executable, __file__, "--pandas-worker", str(landing)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - began
    if status != 0:
        raise SystemExit(f"pandas baseline failed: {out}")
    result = json.loads(out.strip().splitlines()[-1])
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall_seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
            "peak_rss_mib": round(usage.ru_maxrss / 1024), **result,
            "seconds_per_million": round(seconds / (result["mods"] / 1e6), 2)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON line per size and engine."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", nargs="+", default=["1000000,10000000"], help="mod counts (comma or space)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--driver-memory", default=DRIVER_MEMORY)
    p.add_argument("--driver-java-options", default=DRIVER_JAVA_OPTIONS, help="'' for the JVM's defaults")
    p.add_argument("--no-pandas", action="store_true")
    p.add_argument("--no-cds", action="store_true", help="no class-data-sharing archive (var/cds/)")
    p.add_argument("--pandas-worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.pandas_worker:
        pandas_throughput(args.pandas_worker)
        return 0
    results = []
    for mods in (int(s) for s in ",".join(args.sizes).split(",") if s):
        landing = ensure_landing(mods)
        spark = run_spark(landing, mods, args)
        print(json.dumps({"size": mods, "engine": "spark", **spark}), flush=True)
        results.append({"size": mods, "spark": spark})
        if not args.no_pandas:
            results[-1]["pandas"] = run_pandas(landing)
            print(json.dumps({"size": mods, "engine": "pandas", **results[-1]["pandas"]}), flush=True)
    (BENCH / "spark_report.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
