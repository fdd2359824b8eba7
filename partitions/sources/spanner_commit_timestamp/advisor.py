"""DDL advice for polling a table by commit timestamp without hotspots (seeds 002 and 004).

Seed 004 (Spanner Change Watcher at scale): add a computed shard column
``MOD(FARM_FINGERPRINT(...), 19)`` STORED, so existing writers need no change, and a
NULL_FILTERED index on (shard, commit timestamp); then poll every shard value with a
FORCE_INDEX hint. MOD of a signed fingerprint ranges over [-18, 18]: 37 shard values.
Seed 002: a commit timestamp that leads a primary key or an index is a write hotspot.

The seeds show only GoogleSQL. The PostgreSQL forms below are the dialect's
counterparts (a generated column with ``spanner.farm_fingerprint``, and an index whose
``WHERE ... IS NOT NULL`` clause stands in for NULL_FILTERED, which PostgreSQL lacks);
the advice says so, so that they are checked before being run.
"""

from __future__ import annotations

from collections.abc import Iterable

from partitions.sources.kinds import Advice
from partitions.sources.spanner_change_stream.query import GOOGLESQL, POSTGRESQL

from .query import quote
from .settings import check_identifier

DEFAULT_MODULUS = 19  # seed 004's figure: at least as many values as the instance has servers


def advise(
    table: str,
    timestamp_column: str,
    key_columns: Iterable[str],
    dialect: str,
    *,
    indexes: dict[str, Iterable[str]] | None = None,
    shard_column: str = "",
    shard_column_exists: bool = False,
    modulus: int = DEFAULT_MODULUS,
) -> Advice:
    """Return the shard column and index DDL for a table, and warnings about its existing key and indexes.

    ``indexes`` maps the table's existing index names to their columns in order;
    ``shard_column`` names the column to add (or to use, with ``shard_column_exists``).
    """
    if dialect not in (GOOGLESQL, POSTGRESQL):
        raise ValueError(f"unknown dialect {dialect!r}")
    if not 2 <= modulus <= 500:
        raise ValueError("the modulus must be 2-500: each of the 2 * modulus - 1 shard values is a partition")
    keys = [check_identifier(k, "key column") for k in key_columns]
    check_identifier(table, "table name")
    check_identifier(timestamp_column, "timestamp column")
    default_shard = "ShardId" if dialect == GOOGLESQL else "shard_id"
    shard = check_identifier(shard_column or default_shard, "shard column")
    index = _index_name(table, shard, timestamp_column, dialect)
    statements = [] if shard_column_exists else [_add_shard_column(table, shard, keys, dialect, modulus)]
    statements.append(_create_index(table, index, shard, timestamp_column, dialect))
    shards = f"{-(modulus - 1)}-{modulus - 1}"
    notes = _notes(modulus, shards, dialect, shard_column_exists)
    warnings = hotspot_warnings(table, timestamp_column, keys, indexes or {}, dialect)
    settings = {"shard_column": shard, "shards": shards, "index": index}
    return Advice(tuple(statements), tuple(warnings), tuple(notes), settings)


def _notes(modulus: int, shards: str, dialect: str, shard_column_exists: bool) -> list[str]:
    """Return what to know before running the statements and starting the stream."""
    notes = [
        f"MOD(FARM_FINGERPRINT(...), {modulus}) is negative for negative fingerprints: watch the "
        f"{2 * modulus - 1} shard values {shards}, one partition each.",
        "Write the commit timestamp with PENDING_COMMIT_TIMESTAMP() (SPANNER.PENDING_COMMIT_TIMESTAMP() in "
        "PostgreSQL) or spanner.commit_timestamp() in mutations: a value supplied by the writer may lie "
        "behind a poll's watermark and never be read.",
        "To keep the index small, set the commit timestamp (or the shard) to NULL for rows no longer "
        "changed, with partitioned DML, only when nothing updates those rows meanwhile (seed 004).",
    ]
    if dialect == POSTGRESQL:
        notes.append(
            "The seeds show GoogleSQL only. PostgreSQL has no NULL_FILTERED keyword: the index's "
            "WHERE ... IS NOT NULL clause is its counterpart; check both statements on your database first."
        )
    if not shard_column_exists:
        notes.append("A BYTES key column needs TO_BASE64(col) (encode(col, 'base64')) instead of the cast.")
    return notes


def hotspot_warnings(
    table: str, timestamp_column: str, key_columns: list[str], indexes: dict[str, Iterable[str]], dialect: str
) -> list[str]:
    """Return a warning for each place a commit timestamp leads a key: the primary key or an index."""
    same = (lambda a, b: a.lower() == b.lower()) if dialect == GOOGLESQL else (lambda a, b: a == b)
    warnings = []
    if key_columns and same(key_columns[0], timestamp_column):
        warnings.append(
            f"{table}'s primary key starts with the commit timestamp {timestamp_column}: every write "
            "lands at the end of the key space, a hotspot even at low write rates (seed 002)."
        )
    for name, columns in indexes.items():
        columns = list(columns)
        if columns and same(columns[0], timestamp_column):
            warnings.append(
                f"index {name} starts with the commit timestamp {timestamp_column}: a write hotspot "
                "(seed 002); lead it with a shard column instead, as the statements here do (seed 004)."
            )
    return warnings


def _hash_input(keys: list[str], dialect: str) -> str:
    """Return the text to fingerprint: the key columns as text, NULL-safe, joined by "|"."""
    # COALESCE: a NULL key part must not make the shard NULL, which would drop the row
    # from the NULL_FILTERED index and so from every poll.
    if dialect == GOOGLESQL:
        parts = [f"COALESCE(CAST({quote(k, dialect)} AS STRING), '')" for k in keys]
        separator = ", '|', "
        return parts[0] if len(parts) == 1 else f"CONCAT({separator.join(parts)})"
    parts = [f"coalesce({quote(k, dialect)}::text, '')" for k in keys]
    return " || '|' || ".join(parts)


def _add_shard_column(table: str, shard: str, keys: list[str], dialect: str, modulus: int) -> str:
    """Return the statement adding the computed, stored shard column."""
    t, s = quote(table, dialect), quote(shard, dialect)
    if dialect == GOOGLESQL:
        return (
            f"ALTER TABLE {t} ADD COLUMN {s} INT64 AS "
            f"(MOD(FARM_FINGERPRINT({_hash_input(keys, dialect)}), {modulus})) STORED"
        )
    return (
        f"ALTER TABLE {t} ADD COLUMN {s} bigint GENERATED ALWAYS AS "
        f"(mod(spanner.farm_fingerprint({_hash_input(keys, dialect)}), {modulus})) STORED"
    )


def _create_index(table: str, index: str, shard: str, ts: str, dialect: str) -> str:
    """Return the statement creating the null-filtered (shard, commit timestamp) index."""
    t, i, s, c = (quote(n, dialect) for n in (table, index, shard, ts))
    if dialect == GOOGLESQL:
        return f"CREATE NULL_FILTERED INDEX {i} ON {t} ({s}, {c})"
    return f"CREATE INDEX {i} ON {t} ({s}, {c}) WHERE {s} IS NOT NULL AND {c} IS NOT NULL"


def _index_name(table: str, shard: str, ts: str, dialect: str) -> str:
    """Return a name for the index, at most 128 characters."""
    # PostgreSQL folds an unquoted name to lower case, and the FORCE_INDEX hint names the
    # index unquoted: a lower-case name means the same thing either way.
    name = f"{table}By{shard}{ts}" if dialect == GOOGLESQL else f"{table}_{shard}_{ts}".lower()
    return name if len(name) <= 128 else check_identifier(name[:128], "index name")
