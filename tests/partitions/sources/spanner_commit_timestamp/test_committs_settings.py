"""Settings: what clean() accepts and refuses, the shard list parser, and the kind's declarations."""

from __future__ import annotations

import pytest

from partitions.sources.base import SettingsError
from partitions.sources.kinds import ReadKind
from partitions.sources.spanner_commit_timestamp.kind import KIND
from partitions.sources.spanner_commit_timestamp.settings import parse_shards

GOOD = {
    "project": "my-project",
    "instance": "prod-1",
    "database": "orders",
    "table": "Singers",
    "timestamp_column": "LastModified",
    "key_columns": "SingerId, VenueId",
}


def errors_of(**changes) -> dict[str, str]:
    with pytest.raises(SettingsError) as caught:
        KIND.clean({**GOOD, **changes})
    return caught.value.errors


def test_the_kind_declares_its_name_method_and_fixed_partitions():
    assert KIND.name == "spanner_commit_timestamp"
    assert KIND.label == "Spanner table (commit timestamp)"
    assert KIND.read_method == "spanner-commit-timestamp"
    assert isinstance(KIND, ReadKind)
    assert not KIND.lineage
    flags = [s.cli for s in KIND.settings]
    assert flags == [
        "--project", "--instance", "--database", "--dialect", "--table", "--timestamp-column",
        "--key-columns", "--shard-column", "--shards", "--index", "--emulator-host",
    ]  # fmt: skip
    assert next(s for s in KIND.settings if s.name == "dialect").choices == ("", "googlesql", "postgresql")


def test_clean_fills_defaults_and_splits_lists():
    cleaned = KIND.clean(GOOD)
    assert cleaned["key_columns"] == ["SingerId", "VenueId"]
    assert cleaned["dialect"] == ""
    assert (cleaned["shard_column"], cleaned["shards"], cleaned["index"], cleaned["emulator_host"]) == (
        "",
        [],
        "",
        "",
    )


@pytest.mark.parametrize(
    ("text", "shards"),
    [
        ("0-18", list(range(19))),
        ("-18-18", list(range(-18, 19))),
        ("-5--3", [-5, -4, -3]),
        ("a,b,c", ["a", "b", "c"]),
        ("1, 3,5-6", [1, 3, 5, 6]),
        (["0-2", "7"], [0, 1, 2, 7]),
    ],
)
def test_shard_lists_accept_ranges_and_values(text, shards):
    assert list(parse_shards(text)) == shards


@pytest.mark.parametrize(
    ("text", "why"), [("5-1", "backwards"), ("1,1", "twice"), ("1,,2", "empty"), ("0-5000", "more than")]
)
def test_bad_shard_lists_are_refused_with_the_reason(text, why):
    with pytest.raises(ValueError, match=why):
        parse_shards(text)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("table", "Singers; DROP TABLE Singers"),
        ("table", "`Singers`"),
        ("timestamp_column", "Last Modified"),
        ("timestamp_column", 'x" OR 1=1 --'),
        ("key_columns", "SingerId,Venue-Id"),
        ("shard_column", "Shard/*"),
        ("index", "idx */ SELECT"),
        ("table", "1Singers"),
        ("table", "S" * 129),
    ],
)
def test_identifiers_that_are_not_plain_names_are_refused_per_field(field, value):
    extra = {"shards": "0-3"} if field == "shard_column" else {}
    errors = errors_of(**{field: value}, **extra)
    assert list(errors) == [field]
    assert "letter followed by letters, digits or underscores" in errors[field]


def test_shards_and_shard_column_require_each_other():
    assert errors_of(shard_column="ShardId") == {
        "shards": "a shard column needs the shard values to watch, e.g. 0-18"
    }
    assert list(errors_of(shards="0-18")) == ["shard_column"]


def test_every_bad_setting_is_named_at_once():
    errors = errors_of(
        project="",
        database="Bad DB",
        dialect="mysql",
        key_columns="",
        emulator_host="localhost",
        colour="red",
    )
    assert set(errors) == {"project", "database", "dialect", "key_columns", "emulator_host", "settings"}
    assert "required" in errors["project"]
    assert "host:port" in errors["emulator_host"]


@pytest.mark.parametrize("host", ["localhost:9010", "127.0.0.1:9010", "[::1]:9010", "spanner-emu.local:1"])
def test_emulator_hosts_are_host_and_port(host):
    assert KIND.clean({**GOOD, "emulator_host": host})["emulator_host"] == host


@pytest.mark.parametrize("host", ["localhost", "localhost:0", "localhost:70000", "http://x:1", "a b:1"])
def test_bad_emulator_hosts_are_refused(host):
    assert list(errors_of(emulator_host=host)) == ["emulator_host"]
