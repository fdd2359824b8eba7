"""Template filters naming a stream's source: its kind's label and its settings in one line."""

from __future__ import annotations

from django import template

from partitions.sources import KINDS

register = template.Library()


@register.filter
def source(stream) -> str:
    """Return one line naming the stream's source, as its kind describes it."""
    kind = KINDS.get(stream.source_kind)
    return kind.describe(stream.connection) if kind else stream.source_kind


@register.filter
def kind_label(stream) -> str:
    """Return the label of the stream's kind ("Spanner change stream", ...)."""
    kind = KINDS.get(stream.source_kind)
    return kind.label if kind else stream.source_kind
