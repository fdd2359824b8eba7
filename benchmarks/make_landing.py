"""Generate a synthetic landing zone of N mods in LANDING_SCHEMA, as the pipeline lays it out.

One Parquet file per partition and read window under
``<out>/stream_id=<id>/date=YYYY-MM-DD/``, plus ``<out>/lineage-<name>.json`` (token,
start_at, end_at, parents) for the churn report. Distributions: partitions of skewed
load that split and merge every few windows, transactions spanning 1-3 partitions,
1-4 records per partition, geometric mods per record, lognormal value sizes and read
latencies with a slow tail, and every 50th window's second half re-delivered (1-3% of mods).

    python benchmarks/make_landing.py --mods 1000000 --out var/bench/landing-1m
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from partitions.sources.landing import LANDING_SCHEMA, stream_dir
from partitions.sources.spanner_change_stream.landing import READ_METHOD  # noqa: E402

TABLES = ["Orders", "OrderItems", "Customers", "Payments", "AuditLog"]
TABLE_WEIGHTS = [0.30, 0.35, 0.10, 0.15, 0.10]
CAPTURE_TYPES = [
    "OLD_AND_NEW_VALUES",
    "NEW_VALUES",
    "NEW_ROW",
    "NEW_ROW_AND_OLD_VALUES",
    "OLD_AND_NEW_VALUES",
]
MOD_TYPES = ["INSERT", "UPDATE", "DELETE"]
TAGS = ["", "checkout", "refund", "nightly-batch", "profile-edit", "app=web", "app=mobile"]
TAG_WEIGHTS = [0.35, 0.2, 0.05, 0.1, 0.1, 0.12, 0.08]
MODS_PER_TX = 3.8  # measured mean of the shape below; sizes the transaction rate
# One window in this many is read again later (its second half lands twice), starting
# with the 8th: 1M mods (17 windows) get one, 10M (167) four, so dedupe always has work.
REDELIVER_EVERY = 50
_HEX = np.array([f"{i:02x}" for i in range(256)], dtype="S2")

# The stream's id in the layout (stream_id=<id>/): the benchmarks' reports read id 1.
STREAM_ID = 1


class Topology:
    """Live partitions with load weights; split or merge one every few windows."""

    def __init__(self, rng: np.random.Generator, stream: str, start: datetime, count: int = 8):
        self.rng, self.stream = rng, stream
        self.live: list[dict] = [self._new(start, []) for _ in range(count)]
        self.ended: list[dict] = []

    def _new(self, at: datetime, parents: list[str]) -> dict:
        seed = f"{at.isoformat()}|{'|'.join(parents)}|{self.rng.integers(1 << 62)}"
        token = hashlib.sha1(seed.encode()).hexdigest()[:28]
        return {
            "token": token,
            "start_at": at,
            "end_at": None,
            "parents": parents,
            "w": self.rng.lognormal(0, 1),
        }

    def churn(self, at: datetime) -> None:
        """Split a partition in two, or merge two neighbours, at time ``at``."""
        split = len(self.live) < 6 or (len(self.live) < 24 and self.rng.random() < 0.6)
        i = int(self.rng.integers(len(self.live) - (0 if split else 1)))
        parents = self.live[i : i + (1 if split else 2)]
        for p in parents:
            p["end_at"] = at
        tokens = [p["token"] for p in parents]
        children = [self._new(at, tokens) for _ in range(2 if split else 1)]
        self.live[i : i + len(parents)] = children
        self.ended.extend(parents)

    def lineage(self) -> list[dict]:
        """Return every partition as JSON-ready dicts."""
        iso = lambda t: t.isoformat().replace("+00:00", "Z") if t else None  # noqa: E731
        return [
            {
                "token": p["token"],
                "start_at": iso(p["start_at"]),
                "end_at": iso(p["end_at"]),
                "parents": p["parents"],
            }
            for p in self.ended + self.live
        ]


def hex_ids(values: np.ndarray) -> np.ndarray:
    """Return 16-char hex strings of uint64 values, scrambled so they look random."""
    mixed = (values.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)).astype(">u8")
    return _HEX[mixed.view(np.uint8).reshape(-1, 8)].view("S16").ravel()


def transactions(rng, n_tx: int, n_parts: int, weights: np.ndarray) -> dict:
    """Return one row per (transaction, partition) with the records each lands there."""
    spans = rng.choice([1, 2, 3], size=n_tx, p=[0.8, 0.15, 0.05])
    spans = np.minimum(spans, n_parts)
    first = rng.choice(n_parts, size=n_tx, p=weights / weights.sum())
    step = rng.integers(1, max(2, (n_parts - 1) // 2 + 1), size=n_tx)
    tx = np.repeat(np.arange(n_tx), spans)
    nth = np.arange(len(tx)) - np.repeat(np.cumsum(spans) - spans, spans)
    part = (first[tx] + nth * step[tx]) % n_parts
    recs = np.minimum(rng.geometric(0.65, size=len(tx)), 4)
    return {"tx": tx, "part": part, "recs": recs, "spans": spans}


def window_rows(rng, topo: Topology, start: datetime, seconds: int, n_tx: int, tx_base: int) -> pa.Table:
    """Return the mods committed in one window over the live partitions, sorted by partition."""
    weights = np.array([p["w"] for p in topo.live])
    tp = transactions(rng, n_tx, len(topo.live), weights)
    rec_tx, rec_part = np.repeat(tp["tx"], tp["recs"]), np.repeat(tp["part"], tp["recs"])
    n_recs_tx = np.bincount(rec_tx, minlength=n_tx)
    seq = np.arange(len(rec_tx)) - np.repeat(np.cumsum(n_recs_tx) - n_recs_tx, n_recs_tx)
    table = rng.choice(len(TABLES), size=len(rec_tx), p=TABLE_WEIGHTS)
    mod_type = rng.choice(3, size=len(rec_tx), p=[0.5, 0.4, 0.1])
    mods = np.minimum(rng.geometric(0.5, size=len(rec_tx)), 20)
    r = np.repeat(np.arange(len(rec_tx)), mods)
    mod_index = np.arange(len(r)) - np.repeat(np.cumsum(mods) - mods, mods)
    t0 = int(start.timestamp() * 1e6)
    commit_tx = t0 + rng.integers(0, seconds * 1_000_000, size=n_tx)
    lag = rng.lognormal(np.log(1.2e6), 0.7, size=len(r)).astype(np.int64)
    lag[rng.random(len(r)) < 0.01] += rng.integers(30_000_000, 120_000_000)
    cols = {
        "tx": tp["tx"],
        "r_tx": rec_tx[r],
        "part": rec_part[r],
        "seq": seq[r],
        "table": table[r],
        "mod_type": mod_type[r],
        "mod_index": mod_index,
        "commit": commit_tx[rec_tx[r]],
        "read": commit_tx[rec_tx[r]] + lag,
        "n_recs": n_recs_tx[rec_tx[r]],
        "n_parts": tp["spans"][rec_tx[r]],
    }
    tags = rng.choice(len(TAGS), size=n_tx, p=TAG_WEIGHTS)
    system = rng.random(n_tx) < 0.01
    return to_arrow(rng, topo, cols, tags, system, tx_base)


def _s(values) -> pa.Array:
    return pa.array(values, type=pa.binary()).cast(pa.string())


def _json_values(rng, n: int, mod_type: np.ndarray) -> tuple[pa.Array, pa.Array, pa.Array]:
    keys = pc.binary_join_element_wise(
        '{"id":"', pc.cast(pa.array(rng.integers(1, 10**9, size=n)), pa.string()), '"}', ""
    )
    size_new = np.where(mod_type == 2, 0, rng.lognormal(np.log(120), 0.9, size=n).astype(np.int64))
    size_old = np.where(mod_type == 0, 0, rng.lognormal(np.log(60), 0.9, size=n).astype(np.int64))
    values = []
    for size in (size_new, size_old):
        body = pc.binary_repeat(pa.scalar("x"), pa.array(size))
        wrapped = pc.binary_join_element_wise('{"payload":"', body, '"}', "")
        values.append(pc.if_else(pa.array(size == 0), pa.scalar("{}"), wrapped))
    return keys, values[0], values[1]


def to_arrow(rng, topo: Topology, c: dict, tags, system, tx_base: int) -> pa.Table:
    """Build the LANDING_SCHEMA table of one window's mods."""
    n = len(c["commit"])
    order = np.argsort(c["part"], kind="stable")
    c = {k: (v[order] if len(v) == n else v) for k, v in c.items()}
    tokens = np.array([p["token"] for p in topo.live])[c["part"]]
    tx_ids = _s(hex_ids(tx_base + c["r_tx"]))
    seq = pc.utf8_lpad(pc.cast(pa.array(c["seq"]), pa.string()), 8, "0")
    commit = pa.array(c["commit"], type=pa.timestamp("us", tz="UTC"))
    keys, new, old = _json_values(rng, n, c["mod_type"])
    mod_index = pa.array(c["mod_index"], type=pa.int32())
    iso = pc.binary_join_element_wise(pc.strftime(commit, format="%Y-%m-%dT%H:%M:%S"), "Z", "")
    parts = pa.concat_arrays([iso, tx_ids, seq, pc.cast(mod_index, pa.string())])
    sort_keys = pa.ListArray.from_arrays(
        pa.array(np.arange(0, 4 * n + 1, 4), pa.int32()),
        parts.take((np.arange(n)[:, None] + np.arange(4)[None, :] * n).ravel()),
    )
    uuid = _s(
        hex_ids(rng.integers(0, 2**63, size=n)).astype("S16") + hex_ids(np.arange(n) + tx_base).astype("S16")
    )
    table_names = pa.array(np.array(TABLES)[c["table"]])
    data = {
        "uuid": uuid, "stream_name": pa.array([topo.stream] * n), "read_method": pa.array([READ_METHOD] * n),
        "object": table_names, "read_timestamp": pa.array(c["read"], type=pa.timestamp("us", tz="UTC")),
        "source_timestamp": commit, "sort_keys": sort_keys, "partition_token": pa.array(tokens),
        "commit_timestamp": commit, "server_transaction_id": tx_ids, "record_sequence": seq,
        "table_name": table_names, "mod_index": mod_index,
        "mod_type": pa.array(np.array(MOD_TYPES)[c["mod_type"]]),
        "value_capture_type": pa.array(np.array(CAPTURE_TYPES)[c["table"]]),
        "keys": keys, "new_values": new, "old_values": old,
        "number_of_records_in_transaction": pa.array(c["n_recs"], pa.int64()),
        "number_of_partitions_in_transaction": pa.array(c["n_parts"], pa.int64()),
        "transaction_tag": pa.array(np.array(TAGS)[tags[c["r_tx"]]]),
        "is_system_transaction": pa.array(system[c["r_tx"]]),
        "mod_bytes": pc.add(pc.add(pc.binary_length(keys), pc.binary_length(new)), pc.binary_length(old)),
    }  # fmt: skip
    data["mod_bytes"] = data["mod_bytes"].cast(pa.int64())
    return pa.Table.from_pydict(data, schema=LANDING_SCHEMA)


def write_window(out: Path, topo: Topology, table: pa.Table, start: datetime, suffix: str = "") -> int:
    """Write one file per partition of a window's rows; return the number of files."""
    day = out / stream_dir(STREAM_ID) / f"date={start:%Y-%m-%d}"
    day.mkdir(parents=True, exist_ok=True)
    tokens = table.column("partition_token").to_numpy(zero_copy_only=False)
    bounds = np.flatnonzero(np.r_[True, tokens[1:] != tokens[:-1], True])
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=False):
        name = f"{tokens[lo]}-{start:%Y%m%dT%H%M%S}{suffix}.parquet"
        pq.write_table(table.slice(lo, hi - lo), day / name, compression="zstd")
    return len(bounds) - 1


def redeliver(rng, table: pa.Table) -> pa.Table:
    """Return the second half of a window read again later: duplicates for dedupe."""
    half = table.slice(table.num_rows // 2)
    later = pc.add(
        half.column("read_timestamp"), pa.scalar(int(rng.integers(30, 90) * 1e6), pa.duration("us"))
    )
    return half.set_column(half.schema.get_field_index("read_timestamp"), "read_timestamp", later)


def generate(
    out: Path, stream: str, mods: int, rate: float, start: datetime, seconds: int, seed: int
) -> dict:
    """Write a landing zone of about ``mods`` mods; return counts."""
    rng = np.random.default_rng(seed)
    topo = Topology(rng, stream, start)
    written = files = duplicates = tx_base = window = 0
    at = start
    while written < mods:
        if files and rng.random() < 0.15:
            topo.churn(at)
        n_tx = max(1, round(min(rate * seconds, mods - written) / MODS_PER_TX))
        table = window_rows(rng, topo, at, seconds, n_tx, tx_base)
        files += write_window(out, topo, table, at)
        if window % REDELIVER_EVERY == REDELIVER_EVERY // 7:  # at every size, 1M included
            again = redeliver(rng, table)
            files += write_window(out, topo, again, at, suffix="-r1")
            duplicates += again.num_rows
        written, tx_base, at = written + table.num_rows, tx_base + n_tx, at + timedelta(seconds=seconds)
        window += 1
    (out / f"lineage-{stream}.json").write_text(json.dumps(topo.lineage(), indent=1))
    return {
        "mods": written,
        "duplicates": duplicates,
        "files": files,
        "start": start.isoformat(),
        "end": at.isoformat(),
    }


def main(argv: list[str] | None = None) -> int:
    """Parse arguments and generate the landing zone."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mods", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--stream", default="bench")
    p.add_argument("--rate", type=float, default=1000.0, help="mods per second of commit time")
    p.add_argument("--start", default="2026-11-20T22:00:00+00:00")
    p.add_argument("--window-seconds", type=int, default=60)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    began = time.monotonic()
    start = datetime.fromisoformat(a.start).astimezone(UTC)
    counts = generate(a.out, a.stream, a.mods, a.rate, start, a.window_seconds, a.seed)
    print(json.dumps({**counts, "seconds": round(time.monotonic() - began, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
