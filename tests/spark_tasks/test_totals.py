"""The report's totals count users' changes and the system's (Bigtable's garbage collection) apart."""

from __future__ import annotations

from spark_tasks.job import totals, transaction_count
from spark_tasks.rollup import build_record_rollup
from spark_tasks.transactions import build_transaction_profile


def test_system_changes_are_counted_apart_from_users(mods, records):
    # given deduplicated mods, some of system transactions
    expected_system = [mods_of for mods_of in records.values() if mods_of[0]["is_system_transaction"]]
    assert expected_system
    # when the totals are computed
    result = totals(build_record_rollup(mods), transaction_count(build_transaction_profile(mods)))
    # then system and user records and mods add up to the totals, each counted once
    assert result["system_records"] == len(expected_system)
    assert result["system_mods"] == sum(len(m) for m in expected_system)
    assert result["user_records"] == len(records) - len(expected_system)
    assert result["user_mods"] + result["system_mods"] == result["mods"]
    assert result["transactions"] == len({tx for (_, _, tx, _) in records})
