"""The kinds of source cdcweb reads or watches, by the name a Stream stores in ``source_kind``.

Pure Python, no Django: each kind is a package beside this one (its settings, its reader
or watcher, its landing rows, errors, cost model); ``KINDS`` is the one list of them. The
model's choices, the API and its schema, the create form, the admin and the CLI all
derive theirs from it, so a new kind is one folder and one ``register`` line here.
"""

from __future__ import annotations

from importlib import import_module

from .kinds import ReadKind, SourceKind, WatchedKind

KINDS: dict[str, SourceKind] = {}


def register(kind: SourceKind) -> SourceKind:
    """Add a kind to KINDS (the first registered is the default); return it."""
    if not isinstance(kind, ReadKind | WatchedKind):
        raise TypeError(f"{kind!r} is neither a ReadKind nor a WatchedKind")
    KINDS[kind.name] = kind
    return kind


def kind_of(name: str) -> SourceKind:
    """Return the kind named `name`; KeyError names the kinds there are."""
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"unknown source kind {name!r}: use one of {', '.join(KINDS)}") from None


# One folder each, with a kind.py that defines KIND: adding a kind adds its folder's name here.
FOLDERS = ("spanner_change_stream", "spanner_commit_timestamp", "bigtable", "datastream")
for _folder in FOLDERS:
    register(import_module(f"{__name__}.{_folder}.kind").KIND)
DEFAULT_KIND = next(iter(KINDS))
