"""Column values as JSON-ready Python values, and key values back as typed query parameters.

A record's keys and values, and the cursor's key, hold "plain" values: what JSON can
carry (numbers, strings, booleans, null, lists, objects). A key value must also go back
into a query as a parameter of its column's exact type, so the cursor keeps each key
column's type name beside the value and ``bind`` turns the pair back into what the
official client sends.
"""

from __future__ import annotations

import base64
import json
import math
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from google.cloud.spanner_v1 import TypeAnnotationCode, TypeCode, param_types

from streams.times import format_time

# Types a key column may have here; the name is the TypeCode's, or the PostgreSQL
# annotation's where one changes how values are written (PG_NUMERIC).
PARAM_TYPES = {
    "INT64": param_types.INT64,
    "STRING": param_types.STRING,
    "BOOL": param_types.BOOL,
    "FLOAT64": param_types.FLOAT64,
    "FLOAT32": param_types.FLOAT32,
    "TIMESTAMP": param_types.TIMESTAMP,
    "DATE": param_types.DATE,
    "BYTES": param_types.BYTES,
    "NUMERIC": param_types.NUMERIC,
    "PG_NUMERIC": param_types.PG_NUMERIC,
}
_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def type_name(type_pb) -> str:
    """Return the name this module uses for a result column's type (a raw protobuf Type)."""
    if type_pb.type_annotation == TypeAnnotationCode.PG_NUMERIC:
        return "PG_NUMERIC"
    return TypeCode(type_pb.code).name


def parse_timestamp(text: str) -> tuple[datetime, str]:
    """Return a TIMESTAMP value's text as an aware UTC datetime (microseconds) and as plain text.

    Spanner writes RFC 3339 in UTC with up to nine fractional digits; the plain text is
    the one format_time writes (six digits and 'Z'), taken as is when it already is one.
    """
    moment = datetime.fromisoformat(text).astimezone(UTC)  # a tenth of strptime's cost
    if len(text) == 27 and text[19] == "." and text[26] == "Z":
        return moment, text
    return moment, format_time(moment)


def raw_decoder(type_pb):
    """Return a function from a raw protobuf Value of this type to its plain value; None: use the client's.

    The types every table has (integers, strings, booleans, floats, timestamps) are read
    straight from the protobuf, as ``plain(decoded)`` would give them, at a fraction of
    the client's decoding cost; other types go through the client and ``plain``.
    """
    return _RAW.get(type_name(type_pb))


def _null(value) -> bool:
    """Return whether a raw Value is NULL."""
    return value.WhichOneof("kind") == "null_value"


_RAW = {
    "INT64": lambda v: None if _null(v) else int(v.string_value),
    "STRING": lambda v: None if _null(v) else v.string_value,
    "BOOL": lambda v: None if _null(v) else v.bool_value,
    "FLOAT64": lambda v: None if _null(v) else (v.string_value or v.number_value),
    "TIMESTAMP": lambda v: None if _null(v) else parse_timestamp(v.string_value)[1],
}


def plain(value: Any) -> Any:
    """Return a value as the official client decodes it, turned into what JSON can hold."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes):
        # The client (3.71) decodes BYTES to the base64 text Spanner sends, as bytes: that
        # text is the JSON form (as in change stream mods); raw bytes are encoded to it.
        try:
            return value.decode("ascii")
        except UnicodeDecodeError:
            return base64.b64encode(value).decode("ascii")
    if isinstance(value, Decimal):
        return str(value)
    if hasattr(value, "serialize"):  # the client's JsonObject
        serialized = value.serialize()
        return None if serialized is None else json.loads(serialized)
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return str(value)


def bind(value: Any, type_: str) -> Any:
    """Return a plain key value as the Python value the client binds for a parameter of type_."""
    if value is None:
        return None
    if type_ in ("INT64", "STRING", "BOOL"):
        return value
    if type_ in ("FLOAT64", "FLOAT32"):
        return _SPECIAL_FLOATS.get(value, value) if isinstance(value, str) else float(value)
    if type_ == "TIMESTAMP":
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    if type_ == "DATE":
        return date.fromisoformat(value)
    if type_ == "BYTES":
        return value.encode("ascii")  # the client sends bytes parameters base64-encoded
    if type_ in ("NUMERIC", "PG_NUMERIC"):
        return Decimal(value)
    raise ValueError(f"a key of type {type_} cannot be a query parameter here")
