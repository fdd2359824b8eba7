"""Cost per table and day: volumes from the mods, money from the price model's formula."""

import math
from collections import Counter

from spark_tasks.cost import GIB, LIST_PRICE, PriceModel, assumptions, build_cost


def test_cost_follows_the_price_model(mods, unique_mods, collect):
    # given a price model with a fixed overhead factor
    prices = PriceModel(retention_days=7, overhead_factor=1.5, nodes=2, edition="enterprise")
    bytes_per_key = Counter()
    for m in unique_mods:
        bytes_per_key[(m["table_name"], m["commit_timestamp"].date().isoformat())] += m["mod_bytes"]
    # when the cost table is built
    got = {(r["table_name"], r["day"]): r for r in collect(build_cost(mods, prices))}
    # then bytes are the mods' bytes and storage is bytes x overhead x retention x price / month
    assert {k: r["bytes"] for k, r in got.items()} == dict(bytes_per_key)
    for row in got.values():
        storage = row["bytes"] * 1.5 / GIB * 7 * 0.30 / 30.42
        assert math.isclose(row["storage_usd"], storage)
        assert row["compute_usd_low"] < row["compute_usd_high"]
        assert math.isclose(row["total_usd_high"], storage + row["compute_usd_high"])


def test_compute_is_spread_over_tables_by_bytes(mods, collect):
    # given the default price model
    rows = collect(build_cost(mods))
    # when the tables of one day are added up
    day = rows[0]["day"]
    same_day = [r for r in rows if r["day"] == day]
    hours = same_day[0]["covered_hours"]
    # then they share the day's node hours x the edition's price x (enabled + read share)
    assert math.isclose(sum(r["compute_usd_high"] for r in same_day), hours * 1 * 0.90 * (0.10 + 0.30))
    assert all(r["overhead_factor"] > 1 for r in rows)  # measured: records carry an envelope


def test_every_price_is_labelled_as_a_list_price():
    # given the default assumptions
    shown = {a["name"]: a for a in assumptions(PriceModel())}
    # then prices name their source and say they are list prices
    assert shown["node_hour_usd"]["value"] == 0.90
    assert LIST_PRICE in shown["storage_usd_per_gib_month"]["source"]
    assert LIST_PRICE in shown["node_hour_usd"]["source"]
