"""Filters of the streams API (django-filter)."""

from __future__ import annotations

import django_filters

from streams.models import Stream, StreamError


class StreamFilterSet(django_filters.FilterSet):
    """Filter streams by state (repeatable: ?state=RUNNING&state=FAILED) and name."""

    state = django_filters.MultipleChoiceFilter(choices=Stream.State.choices)
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Stream
        fields = ("state", "name", "dialect")


class StreamErrorFilterSet(django_filters.FilterSet):
    """Filter a stream's errors by kind and partition."""

    kind = django_filters.MultipleChoiceFilter(choices=StreamError.Kind.choices)

    class Meta:
        model = StreamError
        fields = ("kind", "partition")
