"""Partitions API: every partition, and the partitions of one stream."""

from __future__ import annotations

from django.db.models import F, Prefetch
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import viewsets

from partitions.models import LAG_KEY, Partition, PartitionEdge
from streams.api.cache import CachedReadMixin
from streams.api.nested import STREAM_PK, StreamChildViewSet

from .filtersets import PartitionFilterSet
from .serializers import PartitionDetailSerializer, PartitionSerializer


def partition_rows():
    """Return partitions with the stream's end (for lag) and the sort key of lag."""
    return Partition.objects.annotate(stream_end_at=F("stream__end_at"), lag_key=LAG_KEY).order_by(
        "stream_id", "start_at", "id"
    )


class PartitionViewSet(CachedReadMixin, viewsets.ReadOnlyModelViewSet):
    """Partitions of every stream; one partition with its parent and child tokens."""

    queryset = partition_rows()
    serializer_class = PartitionSerializer
    lookup_value_regex = r"\d+"
    filterset_class = PartitionFilterSet

    def get_queryset(self):
        """Add the lineage neighbours when one partition is shown (two queries, not one per edge)."""
        queryset = super().get_queryset()
        if self.action != "retrieve":
            return queryset
        return queryset.prefetch_related(
            Prefetch("parent_edges", PartitionEdge.objects.select_related("parent").order_by("parent_id")),
            Prefetch("child_edges", PartitionEdge.objects.select_related("child").order_by("child_id")),
        )

    def get_serializer_class(self):
        """Use the detailed serializer for one partition."""
        return PartitionDetailSerializer if self.action == "retrieve" else PartitionSerializer


@extend_schema_view(list=extend_schema(parameters=[STREAM_PK]))
class StreamPartitionViewSet(StreamChildViewSet):
    """The partitions of one stream: filter by state and stall, order by lag or start, paginated."""

    queryset = partition_rows()
    serializer_class = PartitionSerializer
    filterset_class = PartitionFilterSet
