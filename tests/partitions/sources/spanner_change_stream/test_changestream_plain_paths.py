"""The one-frame plain paths of both dialects: same records as the checking paths, or None."""

from __future__ import annotations

import copy
import json

import pytest
from changestream_wire import googlesql_value, postgresql_value, random_records

from partitions.sources.spanner_change_stream.decode import GoogleSqlDecoder
from partitions.sources.spanner_change_stream.parse import (
    build_record,
    decode_postgresql_value,
    plain_data_change_record,
)

BODIES = [r["data_change_record"] for r in random_records(400, seed=5) if "data_change_record" in r]


def _body() -> dict:
    return copy.deepcopy(BODIES[0])


def test_the_plain_postgresql_path_builds_what_the_checking_builder_builds():
    for body in BODIES:
        assert plain_data_change_record(body) == build_record("data_change_record", body, "t")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("commit_timestamp", "2024-05-01T11:00:00+02:00"),  # valid, but not Z: the checking path converts
        ("commit_timestamp", "not a time"),
        ("record_sequence", 7),  # a number, which the checking builder turns into "7"
        ("number_of_records_in_transaction", "2"),
        ("is_system_transaction", None),
        ("mods", {"keys": {}}),
        ("mod_type", "UPSERT"),
        ("mod_type", ["INSERT"]),
    ],
)
def test_the_plain_postgresql_path_leaves_unusual_bodies_to_the_checking_builder(field, value):
    body = _body()
    body[field] = value
    assert plain_data_change_record(body) is None


def test_the_plain_postgresql_path_leaves_a_missing_field_or_a_null_mod_to_the_checking_builder():
    missing = _body()
    del missing["transaction_tag"]
    null_old = _body()
    null_old["mods"][0]["old_values"] = None
    assert plain_data_change_record(missing) is None
    assert plain_data_change_record(null_old) is None


def test_a_converted_timestamp_gives_the_same_record_on_every_path():
    # given a commit timestamp with an offset, which the plain paths do not take
    record = {"data_change_record": _body()}
    record["data_change_record"]["commit_timestamp"] = "2024-05-01T11:00:00.5+02:00"
    # when both dialects decode it
    pg = decode_postgresql_value(postgresql_value(record), "t")
    gsql = GoogleSqlDecoder().decode(googlesql_value(record), "t")
    # then the checking paths give one UTC record
    assert pg == gsql
    assert pg.commit_timestamp.isoformat() == "2024-05-01T09:00:00.500000+00:00"


@pytest.mark.parametrize("text", [' {"Id": "1"} ', '{"V": NaN}', '{"V": 123456789012345678901234567890}'])
def test_mod_texts_off_the_plain_path_decode_as_the_stdlib_reads_them(text):
    # given a GoogleSQL row whose first mod's new_values text is padded or unusual JSON
    value = googlesql_value({"data_change_record": _body()})
    dcr = value.list_value.values[0].list_value.values[0].list_value.values[0]
    dcr.list_value.values[6].list_value.values[0].list_value.values[1].string_value = text
    # when it is decoded
    decoded = GoogleSqlDecoder().decode(value, "t")
    # then the mod holds exactly what json.loads reads, big integers exact
    assert decoded.mods[0].new_values == json.loads(text)
