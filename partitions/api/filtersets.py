"""Filters and orderings of the partitions API (django-filter)."""

from __future__ import annotations

import django_filters

from partitions.models import Partition

# ?ordering= value -> order_by keys. lag_key is the watermark of an unfinished partition and
# a far-future sentinel for a finished one (lag 0), so "-lag" puts the most behind first.
ORDERINGS = {
    "lag": ("-lag_key", "id"),
    "-lag": ("lag_key", "id"),
    "start": ("start_at", "id"),
    "-start": ("-start_at", "-id"),
}


class PartitionFilterSet(django_filters.FilterSet):
    """Filter partitions by state (repeatable) and stall flag; order by lag or start."""

    state = django_filters.MultipleChoiceFilter(choices=Partition.State.choices)
    stalled = django_filters.BooleanFilter()
    ordering = django_filters.ChoiceFilter(
        choices=[(key, key) for key in ORDERINGS], method="order", label="lag, -lag, start or -start"
    )

    class Meta:
        model = Partition
        fields = ("state", "stalled", "stream")

    def order(self, queryset, name, value):
        """Order by the chosen key, with the id as tie-breaker so pages do not overlap."""
        return queryset.order_by(*ORDERINGS[value])
