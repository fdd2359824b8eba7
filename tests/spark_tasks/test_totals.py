"""The report's totals count users' changes and the system's (Bigtable's garbage collection) apart."""

from __future__ import annotations

from spark_tasks.job import totals
from spark_tasks.landing import to_records
from spark_tasks.transactions import build_transactions


def test_system_changes_are_counted_apart_from_users(mods, records):
    # given deduplicated mods, some of system transactions
    expected_system = [mods_of for mods_of in records.values() if mods_of[0]["is_system_transaction"]]
    assert expected_system
    # when the totals are computed
    result = totals(to_records(mods), build_transactions(mods))
    # then system and user records and mods add up to the totals, each counted once
    assert result["system_records"] == len(expected_system)
    assert result["system_mods"] == sum(len(m) for m in expected_system)
    assert result["user_records"] == len(records) - len(expected_system)
    assert result["user_mods"] + result["system_mods"] == result["mods"]
