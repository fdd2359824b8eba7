"""Transaction shape, summary and tags against plain Python."""

from collections import Counter, defaultdict

import pytest

from spark_tasks.transactions import (
    build_transaction_shape,
    build_transaction_summary,
    build_transaction_tags,
)


@pytest.fixture(scope="module")
def txs(records) -> dict[str, dict]:
    """Per transaction in plain Python: declared counts, landed records, mods, tag."""
    out = defaultdict(lambda: {"landed": 0, "mods": 0})
    for (_, _, tx, _), mods_of_record in records.items():
        first = mods_of_record[0]
        out[tx].update(
            records=first["number_of_records_in_transaction"],
            partitions=first["number_of_partitions_in_transaction"],
            tag=first["transaction_tag"],
            system=first["is_system_transaction"],
        )
        out[tx]["landed"] += 1
        out[tx]["mods"] += len(mods_of_record)
    return dict(out)


def test_shape_distributions_match_plain_python(mods, txs, collect):
    # given each transaction's records, partitions and mods
    expected = {
        (m, v): n
        for m in ("records", "partitions", "mods")
        for v, n in Counter(t[m] for t in txs.values()).items()
    }
    # when the distributions are built
    got = {(r["measure"], r["value"]): r["transactions"] for r in collect(build_transaction_shape(mods))}
    # then each value has the same number of transactions
    assert got == expected


def test_summary_counts_spanning_and_incomplete_transactions(mods, txs, collect):
    # given the transactions in plain Python
    spanning = sum(t["partitions"] > 1 for t in txs.values())
    # when summarised
    (row,) = collect(build_transaction_summary(mods))
    # then spanning share, incomplete (tx0005 lost a record) and system counts agree
    assert row["transactions"] == len(txs)
    assert row["spanning_partitions"] == spanning
    assert row["spanning_share"] == spanning / len(txs)
    assert row["incomplete"] == sum(t["landed"] < t["records"] for t in txs.values()) == 1
    assert row["system"] == sum(t["system"] for t in txs.values())


def test_top_tags_rank_by_transactions(mods, txs, collect):
    # given transactions per tag ("" is untagged)
    per_tag = Counter(t["tag"] for t in txs.values())
    # when the top two tags are asked for
    got = collect(build_transaction_tags(mods, top=2))
    # then they are the two most frequent
    assert [(r["transaction_tag"], r["transactions"]) for r in got] == per_tag.most_common(2)
