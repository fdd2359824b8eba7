"""Price models and call counts the kinds' cost reports rest on (DESIGN §10), every figure with its source.

Pure Python, no Django. A kind's ``cost_model`` gives the fields of the Spark job's
PriceModel (spark_tasks/cost.py) as Assumptions; an operator may override any of them
(CDC_PRICE_*). Prices are list prices for us-central1 as transcribed in 2026: verify
them for your contract.
"""

from __future__ import annotations

from .kinds import Assumption

LIST_PRICE = "list price, verify for your contract"
DAY_SECONDS = 86_400
SPANNER_NODE_HOUR_USD = {"standard": 0.90, "enterprise": 1.23, "enterprise-plus": 1.71}
SPANNER_EDITIONS = "Spanner edition: standard 0.90, enterprise 1.23, enterprise-plus 1.71 USD/node-hour"


def common(retention_days: float, retention_source: str) -> tuple[Assumption, ...]:
    """Return the fields every price model shares: retention, capacity, overhead and the billing month."""
    return (
        Assumption("retention_days", retention_days, "days", retention_source),
        Assumption("nodes", 1.0, "nodes", "the instance's compute capacity: set yours (CDC_PRICE_NODES)"),
        Assumption(
            "overhead_factor",
            None,
            "x mod bytes",
            "null: measured per stream, (mod bytes + envelope) / mod bytes",
        ),
        Assumption("days_per_month", 30.42, "days", "billing month length that turns GiB-months into days"),
    )


SPANNER_STORAGE = f"Spanner regional SSD, us-central1; {LIST_PRICE}"
SPANNER_NODE = f"null: the edition's list price (1 node = 1,000 PU); {LIST_PRICE}"


def spanner(retention_days: float, retention_source: str, cpu: tuple[float, float, float], why: str):
    """Return a Spanner price model: storage, node-hour list price, CPU shares (enabled, read low, high)."""
    enabled, low, high = cpu
    return (
        *common(retention_days, retention_source),
        Assumption("storage_usd_per_gib_month", 0.30, "USD per GiB-month", SPANNER_STORAGE),
        Assumption("edition", "standard", "", SPANNER_EDITIONS),
        Assumption("node_hour_usd", None, "USD per node-hour", SPANNER_NODE),
        Assumption("cpu_share_enabled", enabled, "share of CPU", why),
        Assumption("cpu_share_read_low", low, "share of CPU", why),
        Assumption("cpu_share_read_high", high, "share of CPU", why),
    )


def per_day(name: str, count: float, unit: str, source: str, note: str = "measured") -> Assumption:
    """Return a count a day as a report row (rounded), with where it comes from."""
    return Assumption(name, round(count), unit, source, note)
