"""Write result tables as small JSON files the Django side reads.

A table file is ``{"name", "columns", "rows"}`` with rows as lists in column order;
timestamps are ISO 8601 UTC strings ending in ``Z``, dates ``YYYY-MM-DD``. Files are
written to a temporary name and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

ISO_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"


def collect_table(df: DataFrame) -> tuple[list[str], list[list]]:
    """Return the column names and rows of a small result, timestamps as ISO strings."""
    cols = []
    for field in df.schema.fields:
        if isinstance(field.dataType, T.TimestampType):
            cols.append(F.date_format(field.name, ISO_FORMAT).alias(field.name))
        elif isinstance(field.dataType, T.DateType):
            cols.append(F.col(field.name).cast("string").alias(field.name))
        else:
            cols.append(F.col(field.name))
    rows = [[_plain(v) for v in row] for row in df.select(*cols).collect()]
    return df.columns, rows


def _plain(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as JSON to ``path`` atomically."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)


def write_table(out: Path, name: str, df: DataFrame, **extra) -> int:
    """Write one result table as ``<out>/<name>.json``; return its row count."""
    columns, rows = collect_table(df)
    write_json(out / f"{name}.json", {"name": name, "columns": columns, "rows": rows, **extra})
    return len(rows)
