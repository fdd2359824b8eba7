"""The kinds of source a Stream may have, as streams sees them: a name, a label, and whether it may run.

streams knows nothing of partitions, where the kinds are (partitions/sources/KINDS): the
partitions app hands that registry over when Django is ready (partitions/apps.py), and
this module reads it live. The model's choices and the actions' refusals come from here,
so a new kind needs no migration and no change here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Kind(Protocol):
    """What streams needs of a kind."""

    name: str
    label: str
    unavailable: str  # why streams of this kind cannot run ("" when they can)
    watched: bool  # True: the source runs the stream and cdcweb operates it through the source

    def start_position(self, value: Any) -> dict[str, Any]:
        """Return a source position a recovery starts from (watched kinds), or raise ValueError."""


_KINDS: Mapping[str, Kind] = {}


def use(kinds: Mapping[str, Kind]) -> None:
    """Read the kinds from this registry from now on (by name; later additions count too)."""
    global _KINDS
    _KINDS = kinds


def choices() -> list[tuple[str, str]]:
    """Return (name, label) of every registered kind: Stream.source_kind's choices."""
    return [(kind.name, kind.label) for kind in _KINDS.values()]


class LiveChoices:
    """choices() as an iterable, read afresh at each iteration (for fields that take no callable)."""

    def __iter__(self):
        return iter(choices())


CHOICES = LiveChoices()


def refusal(name: str) -> str:
    """Return why a stream of this kind may not be started ("" when it may)."""
    kind = _KINDS.get(name)
    if kind is None:
        return f"unknown source kind {name!r}: use one of {', '.join(_KINDS) or 'none registered'}"
    return kind.unavailable


def start_position(name: str, value: Any) -> dict[str, Any]:
    """Return the position a watched kind's recovery starts from, checked by the kind; raise ValueError."""
    kind = _KINDS.get(name)
    if kind is None or not kind.watched:
        raise ValueError("only a watched stream recovers from a position of its source")
    return kind.start_position(value)


def watched(name: str) -> bool:
    """Return whether streams of this kind are run by their source (cdcweb watches and operates them)."""
    kind = _KINDS.get(name)
    return bool(kind is not None and kind.watched)
