"""Throughput per table and minute, and the busiest partitions, against plain Python."""

from collections import Counter, defaultdict

from spark_tasks.throughput import build_busiest_partitions, build_partition_activity, build_throughput


def minute(ts) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:00.000000Z")


def test_throughput_per_table_and_minute_matches_plain_python(mods, records, collect):
    # given the deduplicated records, summed in plain Python
    expected = defaultdict(Counter)
    txs = defaultdict(set)
    for (_, commit, tx, _), mods_of_record in records.items():
        key = (mods_of_record[0]["table_name"], minute(commit))
        types = Counter(m["mod_type"] for m in mods_of_record)
        expected[key].update(
            records=1, mods=len(mods_of_record), inserts=types["INSERT"], updates=types["UPDATE"],
            deletes=types["DELETE"], bytes=sum(m["mod_bytes"] for m in mods_of_record),
        )  # fmt: skip
        txs[key].add(tx)
    # when the report is built
    got = {(r["table_name"], r["minute"]): r for r in collect(build_throughput(mods))}
    # then every table and minute has the same figures
    assert set(got) == set(expected)
    for key, counts in expected.items():
        row = got[key]
        assert {k: row[k] for k in counts} == dict(counts), key
        assert row["transactions"] == len(txs[key])
        assert row["stream_name"] == "orders"


def test_busiest_partitions_rank_by_mods(mods, unique_mods, collect):
    # given mods per partition counted in plain Python
    per_partition = Counter(m["partition_token"] for m in unique_mods)
    # when the two busiest are asked for
    got = collect(build_busiest_partitions(mods, top=2))
    # then they are the two with most mods, with their share of all mods
    assert [(r["partition_token"], r["mods"]) for r in got] == per_partition.most_common(2)
    assert got[0]["share_of_mods"] == per_partition.most_common(1)[0][1] / len(unique_mods)


def test_partition_activity_observes_first_and_last_commit(mods, unique_mods, collect, to_iso):
    # given each partition's commits in plain Python
    commits = defaultdict(list)
    for m in unique_mods:
        commits[m["partition_token"]].append(m["commit_timestamp"])
    # when the activity table is built
    got = {r["partition_token"]: r for r in collect(build_partition_activity(mods))}
    # then the observed lifetime is first to last commit
    for token, times in commits.items():
        assert got[token]["first_commit"] == to_iso(min(times))
        assert got[token]["last_commit"] == to_iso(max(times))
        assert abs(got[token]["observed_seconds"] - (max(times) - min(times)).total_seconds()) < 1e-6
