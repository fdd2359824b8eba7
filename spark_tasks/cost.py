"""Cost estimate per stream, table and day from a price model whose every figure is shown.

Storage: change records are retained and billed as Spanner storage, so a day's writes
cost bytes x overhead x retention days x price per GiB-month / days per month.
Compute: a configurable share of the instance's node hours (enabling the stream plus
reading it, as a low-high range), spread over tables by their share of the day's
bytes. Defaults are DESIGN §10's list prices: verify them for your contract.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_tasks.rollup import RECORD_FIXED_BYTES, build_record_rollup

LIST_PRICE = "list price, verify for your contract"
NODE_HOUR_USD = {"standard": 0.90, "enterprise": 1.23, "enterprise-plus": 1.71}
GIB = 1 << 30


@dataclass(frozen=True)
class PriceModel:
    """The cost report's assumptions; each field is a command line setting."""

    retention_days: float = 1.0
    storage_usd_per_gib_month: float = 0.30
    edition: str = "standard"
    node_hour_usd: float | None = None  # None: the edition's list price
    nodes: float = 1.0
    cpu_share_enabled: float = 0.10
    cpu_share_read_low: float = 0.20
    cpu_share_read_high: float = 0.30
    overhead_factor: float | None = None  # None: measured from the landed records
    days_per_month: float = 30.42

    @property
    def node_hour(self) -> float:
        """Return the node-hour price: the override, else the edition's list price."""
        return self.node_hour_usd if self.node_hour_usd is not None else NODE_HOUR_USD[self.edition]


_SOURCES = {
    "retention_days": ("days", "Spanner change streams overview: default 1 day, max 30"),
    "storage_usd_per_gib_month": ("USD per GiB-month", f"Spanner regional SSD, us-central1; {LIST_PRICE}"),
    "edition": ("", "Spanner edition: standard 0.90, enterprise 1.23, enterprise-plus 1.71 USD/node-hour"),
    "node_hour_usd": ("USD per node-hour", f"Spanner compute, us-central1, 1 node = 1,000 PU; {LIST_PRICE}"),
    "nodes": ("nodes", "the instance's compute capacity: set it to yours"),
    "cpu_share_enabled": (
        "share of CPU",
        "Bigtable change streams: +10% CPU when enabled (seed 003); "
        "Google publishes no Spanner figure (DESIGN §10: 0-10%, user-set)",
    ),
    "cpu_share_read_low": ("share of CPU", "Bigtable change streams: +20-30% CPU while read (seed 003)"),
    "cpu_share_read_high": ("share of CPU", "Bigtable change streams: +20-30% CPU while read (seed 003)"),
    "overhead_factor": (
        "x mod bytes",
        "null: measured per stream, (mod bytes + record envelope) / mod bytes",
    ),
    "days_per_month": ("days", "billing month length that turns GiB-months into days"),
}


def assumptions(prices: PriceModel, measured_overhead: dict[str, float] | None = None) -> list[dict]:
    """Return every assumption as {name, value, unit, source}, for printing beside the figures."""
    rows = []
    for f in fields(prices):
        unit, source = _SOURCES[f.name]
        value = asdict(prices)[f.name]
        if f.name == "node_hour_usd" and value is None:
            value = prices.node_hour
        rows.append({"name": f.name, "value": value, "unit": unit, "source": source})
    for stream, factor in sorted((measured_overhead or {}).items()):
        source = f"landed records: table, transaction id, sequence, tag + {RECORD_FIXED_BYTES} bytes each"
        rows.append(
            {"name": f"overhead_factor[{stream}]", "value": factor, "unit": "x mod bytes", "source": source}
        )
    rows.append(
        {"name": "bytes_per_gib", "value": GIB, "unit": "bytes", "source": "GCP bills storage GB as GiB"}
    )
    return rows


def _per_table_day(df: DataFrame) -> DataFrame:
    """Return the record roll-up's cells added up per stream, table and day (a minute's day)."""
    return (
        build_record_rollup(df)
        .withColumn("day", F.to_date("minute"))
        .groupBy("stream_name", "table_name", "day")
        .agg(
            F.sum("records").alias("records"),
            F.sum("mods").alias("mods"),
            F.sum("bytes").alias("bytes"),
            F.sum("envelope_bytes").alias("envelope_bytes"),
            F.min("first_commit").alias("first_commit"),
            F.max("last_commit").alias("last_commit"),
        )
    )


def build_cost(df: DataFrame, prices: PriceModel = PriceModel()) -> DataFrame:  # noqa: B008
    """Return per stream, table and day: volume, retained GiB and USD (storage, compute low/high, total)."""
    stream, stream_day = Window.partitionBy("stream_name"), Window.partitionBy("stream_name", "day")
    measured = (F.sum("bytes").over(stream) + F.sum("envelope_bytes").over(stream)) / F.sum("bytes").over(
        stream
    )
    overhead = F.lit(prices.overhead_factor) if prices.overhead_factor is not None else measured
    span = F.unix_micros(F.max("last_commit").over(stream_day)) - F.unix_micros(
        F.min("first_commit").over(stream_day)
    )
    hours = F.greatest(span / 3.6e9, F.lit(1 / 60))  # the day's observed span of commits, at least a minute
    table_share = F.col("bytes") / F.sum("bytes").over(stream_day)
    node_usd = hours * prices.nodes * prices.node_hour * table_share
    low, high = (
        prices.cpu_share_enabled + s for s in (prices.cpu_share_read_low, prices.cpu_share_read_high)
    )
    retained_gib = F.col("bytes") * F.col("overhead_factor") / GIB
    return (
        _per_table_day(df)
        .withColumn("overhead_factor", overhead)
        .withColumn("covered_hours", hours)
        .withColumn("retained_gib", retained_gib)
        .withColumn(
            "storage_usd",
            retained_gib * prices.retention_days * prices.storage_usd_per_gib_month / prices.days_per_month,
        )  # fmt: skip
        .withColumn("compute_usd_low", node_usd * low)
        .withColumn("compute_usd_high", node_usd * high)
        .withColumn("total_usd_low", F.col("storage_usd") + F.col("compute_usd_low"))
        .withColumn("total_usd_high", F.col("storage_usd") + F.col("compute_usd_high"))
        .drop("envelope_bytes", "first_commit", "last_commit")
        .orderBy("stream_name", "day", "table_name")
    )
