"""The kinds of source cdcweb reads or watches, by the name a Stream stores in ``source_kind``.

Pure Python, no Django: each kind is a package beside this one (its settings, its
reader, its landing rows); the pipeline, pages, API and CLI find them here.
"""

from __future__ import annotations

from partitions.sources.bigtable.kind import KIND as BIGTABLE
from partitions.sources.datastream.kind import KIND as DATASTREAM
from partitions.sources.spanner_change_stream.kind import KIND as SPANNER_CHANGE_STREAM
from partitions.sources.spanner_commit_timestamp.kind import KIND as SPANNER_COMMIT_TIMESTAMP

from .base import SourceKind

KINDS: dict[str, SourceKind] = {
    kind.name: kind for kind in (SPANNER_CHANGE_STREAM, SPANNER_COMMIT_TIMESTAMP, BIGTABLE, DATASTREAM)
}
DEFAULT_KIND = SPANNER_CHANGE_STREAM.name


def kind_of(name: str) -> SourceKind:
    """Return the kind named `name`; KeyError names the kinds there are."""
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"unknown source kind {name!r}: use one of {', '.join(KINDS)}") from None
