"""Filters of the streams API (django-filter)."""

from __future__ import annotations

import django_filters

from streams import kinds
from streams.models import Stream, StreamError


class StreamFilterSet(django_filters.FilterSet):
    """Filter streams by state (repeatable: ?state=RUNNING&state=FAILED), name, kind and dialect."""

    state = django_filters.MultipleChoiceFilter(choices=Stream.State.choices)
    name = django_filters.CharFilter(lookup_expr="icontains")
    source_kind = django_filters.MultipleChoiceFilter(choices=kinds.choices)
    dialect = django_filters.ChoiceFilter(
        field_name="connection__dialect", choices=[("googlesql", "GoogleSQL"), ("postgresql", "PostgreSQL")]
    )

    class Meta:
        model = Stream
        fields = ("state", "name", "source_kind", "dialect")


class StreamErrorFilterSet(django_filters.FilterSet):
    """Filter a stream's errors by kind and partition (by the partition's id)."""

    kind = django_filters.MultipleChoiceFilter(choices=StreamError.Kind.choices)
    partition = django_filters.NumberFilter(field_name="partition_id")

    class Meta:
        model = StreamError
        fields = ("kind", "partition")
