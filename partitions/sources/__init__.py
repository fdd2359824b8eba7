"""The kinds of source cdcweb reads or watches, by the name a Stream stores in ``source_kind``.

Pure Python, no Django: each kind is a package beside this one (its settings, its
reader, its landing rows); the pipeline, pages, API and CLI find them here.
"""

from __future__ import annotations

from .base import SourceKind
from .bigtable.kind import KIND as BIGTABLE
from .datastream.kind import KIND as DATASTREAM
from .spanner_change_stream.kind import KIND as SPANNER_CHANGE_STREAM
from .spanner_commit_timestamp.kind import KIND as SPANNER_COMMIT_TIMESTAMP

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
