"""Partitions API: every partition, and the partitions of one stream."""

from __future__ import annotations

from django.db.models import F, Prefetch
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from partitions.models import LAG_KEY, Partition, PartitionEdge
from partitions.pipeline import partition_actions
from partitions.pipeline.queue import NAMED
from streams.api.cache import CachedReadMixin
from streams.api.nested import STREAM_PK, StreamChildViewSet

from .filtersets import PartitionFilterSet
from .serializers import PartitionDetailSerializer, PartitionSerializer, RefusedSerializer, RereadSerializer

ACTION_RESPONSES = {
    200: PartitionSerializer,
    400: OpenApiResponse(description="invalid arguments, with field errors"),
    409: OpenApiResponse(RefusedSerializer, description="the action does not apply to the partition now"),
}


def partition_rows():
    """Return partitions with the stream's end (for lag) and the sort key of lag."""
    return Partition.objects.annotate(stream_end_at=F("stream__end_at"), lag_key=LAG_KEY).order_by(
        "stream_id", "start_at", "id"
    )


@extend_schema_view(
    release_lease=extend_schema(request=None, responses=ACTION_RESPONSES),
    reread=extend_schema(request=RereadSerializer, responses=ACTION_RESPONSES),
)
class PartitionViewSet(CachedReadMixin, viewsets.ReadOnlyModelViewSet):
    """Partitions of every stream; one partition with its parent and child tokens; operators' actions."""

    queryset = partition_rows()
    serializer_class = PartitionSerializer
    lookup_value_regex = r"\d+"
    filterset_class = PartitionFilterSet
    operate_actions = ("release_lease", "reread")

    def _act(self, do) -> Response:
        """Run a partition action; 409 with the reason and the state when it does not apply."""
        partition = self.get_object()
        try:
            do(partition.pk, self.request.user.get_username())
        except partition_actions.ActionRefused as refused:
            body = {"detail": str(refused), "current_state": refused.state}
            return Response(body, status=status.HTTP_409_CONFLICT)
        return Response(PartitionSerializer(partition_rows().get(pk=partition.pk)).data)

    @action(detail=True, methods=["post"], url_path="release-lease", filter_backends=[])
    def release_lease(self, request, pk=None):
        """End the lease a reader holds: the partition goes to another reader at once."""
        return self._act(lambda pid, by: partition_actions.release_lease(pid, by, NAMED))

    @action(detail=True, methods=["post"], filter_backends=[])
    def reread(self, request, pk=None):
        """Read the partition again from a time (not before its start), landing its records again."""
        body = RereadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        at = body.validated_data["from"]
        return self._act(lambda pid, by: partition_actions.reread(pid, at, by, NAMED))

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
