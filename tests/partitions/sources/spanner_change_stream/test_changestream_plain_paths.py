"""The one-frame plain paths of both dialects: same records as the checking paths, or None."""

from __future__ import annotations

import copy
import json
import random

import pytest
from changestream_wire import googlesql_value, postgresql_value, random_records

from partitions.sources.spanner_change_stream.decode import GoogleSqlDecoder, _plain_mods
from partitions.sources.spanner_change_stream.errors import ChangeRecordError
from partitions.sources.spanner_change_stream.parse import (
    build_record,
    decode_postgresql_value,
    plain_data_change_record,
    typed_data_change_record,
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


def test_the_typed_postgresql_path_builds_what_the_checking_builder_builds():
    for body in BODIES:
        text = json.dumps({"data_change_record": body})
        assert typed_data_change_record(text) == build_record("data_change_record", body, "t")
    # the same body with other spacing: the column types' cache key differs, the record not
    spaced = json.dumps({"data_change_record": BODIES[0]}, indent=2)
    assert typed_data_change_record(spaced) == build_record("data_change_record", BODIES[0], "t")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("commit_timestamp", "2024-05-01T11:00:00+02:00"),
        ("commit_timestamp", "not a time"),
        ("record_sequence", 7),
        ("number_of_records_in_transaction", "2"),
        ("number_of_records_in_transaction", 2.0),
        ("is_last_record_in_transaction_in_partition", 1),
        ("is_system_transaction", None),
        ("mods", {"keys": {}}),
        ("mods", None),
        ("mod_type", "UPSERT"),
        ("mod_type", ["INSERT"]),
        ("column_types", None),
        ("column_types", [{"name": "Id"}]),
        ("column_types", [{"name": "Id", "type": "INT64", "is_primary_key": True, "ordinal_position": 1}]),
    ],
)
def test_the_typed_postgresql_path_leaves_unusual_rows_to_the_other_paths(field, value):
    # given a body with one field unusual, which the plain path also leaves alone
    body = _body()
    body[field] = value
    # then the typed path declines it, and the reader's decode still gives the checking result
    assert typed_data_change_record(json.dumps({"data_change_record": body})) is None
    value = postgresql_value({"data_change_record": body})
    # the same record, or an error naming the same field (a list mod_type was a TypeError)
    assert _outcome(decode_postgresql_value, value, "t") == _outcome(
        build_record, "data_change_record", body, "t"
    )


def _outcome(decode, *args):
    try:
        return decode(*args)
    except ChangeRecordError as error:
        return ("error", error.field)


@pytest.mark.parametrize(
    "row",
    [
        {"data_change_record": BODIES[0], "heartbeat_record": None},  # a second key, even a NULL one
        {"heartbeat_record": {"timestamp": "2024-05-01T09:00:00Z"}},
        {},
    ],
)
def test_the_typed_postgresql_path_takes_only_a_row_of_one_data_change_record(row):
    assert typed_data_change_record(json.dumps(row)) is None


def _tricky_values(rng: random.Random) -> dict:
    """Mod values whose decoding could differ between JSON parsers: floats at full
    precision and at the edges of the exponent range, integers beyond 64 bits, escapes."""
    values = {f"F{i}": rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-300, 300) for i in range(20)}
    values |= {"Tiny": 5e-324, "Big": 1.7976931348623157e308, "NegZero": -0.0, "Half": 0.5}
    values |= {"I64": 2**63 - 1, "Beyond": 2**64 + 1, "Neg": -(2**70), "Zero": 0}
    values |= {"Esc": 'tab\t "quoted" \\ \u00e9 \ud83d\ude00 \u0000', "Emoji": "\U0001f600", "Null": None}
    return values


def test_mod_values_decode_as_the_stdlib_reads_them_on_both_typed_paths():
    rng = random.Random(22)
    for _ in range(50):
        values = _tricky_values(rng)
        text = json.dumps(values)
        # long float spellings: 17+ significant digits must round as the stdlib rounds
        text = text[:-1] + ', "Long": 0.1000000000000000055511151231257827021181583404541015625}'
        body = _body()
        body["mods"][0]["new_values"] = json.loads(text)
        as_dumped = json.dumps(body["mods"][0]["new_values"])
        pg_text = json.dumps({"data_change_record": body}).replace(as_dumped, text)
        assert text in pg_text  # the long spelling is what the typed path reads
        record = typed_data_change_record(pg_text)
        assert record is not None
        expected = json.loads(text)
        assert record.mods[0].new_values == expected
        assert list(map(type, record.mods[0].new_values.values())) == list(map(type, expected.values()))
        value = googlesql_value({"data_change_record": body})
        dcr = value.list_value.values[0].list_value.values[0].list_value.values[0]
        dcr.list_value.values[6].list_value.values[0].list_value.values[1].string_value = text
        assert _plain_mods(dcr.list_value.values[6].list_value.values) is not None  # msgspec took it
        decoded = GoogleSqlDecoder().decode(value, "t")
        assert decoded.mods[0].new_values == json.loads(text)
