"""The Spanner simulator's settings as one dataclass, plus the parsers of their command-line forms.

Argparse-free so that tests, benchmarks and the management command build the same
configuration; every parser raises ValueError with a message fit for one stderr line.
The settings and parsers every simulator shares are in ``core/config.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from partitions.simulator.core import config as core
from partitions.simulator.core.config import ChangeStreamConfig, Fault
from partitions.sources.spanner_change_stream.query import DIALECTS, GOOGLESQL, validate_stream_name

DEFAULT_DATABASES = (("demo-db", "googlesql"), ("demo-pg", "postgresql"))
FAULT_KINDS = ("unavailable", "internal", "malformed", "slow")
_DB_NAME = re.compile(r"[a-z][a-z0-9_-]{1,29}")
_ROLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")  # a database role's name, as CREATE ROLE takes it


@dataclass(frozen=True)
class SimulatorConfig(ChangeStreamConfig):
    """Everything that determines what the Spanner simulator serves (the shared fields: ChangeStreamConfig).

    ``tps`` is transactions per second; each touches 1 to ``max_keys`` keys. Messages hold
    up to ``batch_rows`` records or ``batch_bytes`` bytes.
    """

    databases: tuple[tuple[str, str], ...] = DEFAULT_DATABASES
    stream: str = "Changes"
    max_keys: int = 4
    batch_rows: int = 64
    batch_bytes: int = 64 * 1024
    # The commit-timestamp tables (watched_tables.py): row versions per second in each
    # table, the shard values of the sharded one, and the seconds between a key's writes.
    table_rate: float = 20.0
    table_shards: int = 19
    table_update_after: int = 60
    # (database, role) pairs whose queries are refused with PERMISSION_DENIED: access.py.
    denied: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        validate_stream_name(self.stream)
        super().__post_init__()
        if not 1 <= self.max_keys <= 64:
            raise ValueError(f"max_keys must be between 1 and 64, got {self.max_keys}")
        if self.retention <= 0:
            raise ValueError(f"retention must be positive, got {self.retention}")
        if not self.databases:
            raise ValueError("at least one database is needed")
        if not 0 <= self.table_rate <= 500_000:
            raise ValueError(f"table rate must be between 0 and 500,000 rows/s, got {self.table_rate}")
        if not 1 <= self.table_shards <= 1_000:
            raise ValueError(f"table shards must be between 1 and 1,000, got {self.table_shards}")
        if not 1 <= self.table_update_after <= 86_400:
            raise ValueError(f"table update interval must be 1-86,400 s, got {self.table_update_after}")
        for database, _ in self.denied:
            if self.dialect_of(database) is None:
                raise ValueError(f"cannot deny access to database {database}: it is not served")

    def dialect_of(self, database: str) -> str | None:
        """Return the dialect of a configured database, or None if it is not served."""
        return dict(self.databases).get(database)


def parse_database(text: str) -> tuple[str, str]:
    """Return (name, dialect) for 'NAME' or 'NAME:googlesql|postgresql'."""
    name, _, dialect = text.partition(":")
    dialect = (dialect or GOOGLESQL).lower()
    if not _DB_NAME.fullmatch(name):
        raise ValueError(f"invalid database name {name!r}: use 2-30 of a-z, 0-9, _ and -")
    if dialect not in DIALECTS:
        raise ValueError(f"invalid dialect {dialect!r} for database {name}: use googlesql or postgresql")
    return name, dialect


def parse_denial(text: str) -> tuple[str, str]:
    """Return (database, role) for 'DATABASE' (callers without a role) or 'DATABASE:ROLE'."""
    name, _, role = text.partition(":")
    if not _DB_NAME.fullmatch(name):
        raise ValueError(f"invalid database name {name!r} in --deny: use 2-30 of a-z, 0-9, _ and -")
    if role and not _ROLE.fullmatch(role):
        raise ValueError(f"invalid database role {role!r} in --deny: use letters, digits and _")
    return name, role


def parse_fault(text: str) -> Fault:
    """Return a Fault for 'unavailable:P', 'internal:P', 'malformed:P' (probabilities) or 'slow:MS'."""
    return core.parse_fault(text, FAULT_KINDS)
