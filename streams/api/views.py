"""Streams API: CRUD, operator actions, lineage and lag, transitions and errors."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import filters, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from partitions import queries
from partitions.api.serializers import LagPointSerializer, LineageSerializer, WindowSerializer
from streams import actions
from streams.models import Stream, StreamError, StreamTransition
from streams.transitions import TransitionNotAllowed

from .cache import CachedReadMixin
from .filtersets import StreamErrorFilterSet, StreamFilterSet
from .serializers import (
    ActionSerializer,
    ConflictSerializer,
    RecoverSerializer,
    StreamErrorSerializer,
    StreamSerializer,
    StreamTransitionSerializer,
    annotate_holding,
    attach_totals,
)

STREAM_PK = OpenApiParameter("stream_pk", int, OpenApiParameter.PATH, description="the stream's id")
ACTION_RESPONSES = {
    200: StreamSerializer,
    400: OpenApiResponse(description="invalid arguments, with field errors"),
    409: OpenApiResponse(ConflictSerializer, description="the state machine forbids the move"),
}
WINDOW = [
    OpenApiParameter("since", str, description="ISO 8601 with a zone, 'now' or relative like '-6h'"),
    OpenApiParameter("until", str, description="ISO 8601 with a zone, 'now' or relative like '-5m'"),
]


def _act(view, request, do) -> Response:
    """Run an operator action on the view's stream; 409 naming the state if the move is refused."""
    stream = view.get_object()
    serializer = (RecoverSerializer if view.action == "recover" else ActionSerializer)(data=request.data)
    serializer.is_valid(raise_exception=True)
    try:
        stream = do(stream, by=request.user.get_username(), **serializer.validated_data)
    except TransitionNotAllowed as refused:
        body = {"detail": str(refused), "current_state": refused.current}
        return Response(body, status=status.HTTP_409_CONFLICT)
    except actions.InvalidAction as invalid:
        return Response({"non_field_errors": [str(invalid)]}, status=status.HTTP_400_BAD_REQUEST)
    return Response(view.get_serializer(stream).data)


@extend_schema_view(
    start=extend_schema(request=ActionSerializer, responses=ACTION_RESPONSES),
    pause=extend_schema(request=ActionSerializer, responses=ACTION_RESPONSES),
    resume=extend_schema(request=ActionSerializer, responses=ACTION_RESPONSES),
    recover=extend_schema(request=RecoverSerializer, responses=ACTION_RESPONSES),
    lineage=extend_schema(parameters=WINDOW, responses=LineageSerializer),
    lag=extend_schema(parameters=WINDOW, responses=LagPointSerializer(many=True)),
)
class StreamViewSet(CachedReadMixin, viewsets.ModelViewSet):
    """Change streams: list, create, read, change, delete; start, pause, resume, recover."""

    queryset = Stream.objects.order_by("name")
    serializer_class = StreamSerializer
    lookup_value_regex = r"\d+"
    filterset_class = StreamFilterSet
    filter_backends = [filters.SearchFilter, *viewsets.ModelViewSet.filter_backends]
    search_fields = ["name"]
    operate_actions = ("start", "pause", "resume", "recover")

    def get_queryset(self):
        """Return the streams with their holding partition (the serializer adds the totals)."""
        return annotate_holding(super().get_queryset())

    def paginate_queryset(self, queryset):
        """Count and slice the streams, then add the partition totals of the page only (one query).

        The COUNT leaves the holder subquery out (Django drops unused annotations).
        """
        page = super().paginate_queryset(queryset)
        return attach_totals(list(queryset) if page is None else page)

    @action(detail=True, methods=["post"])
    def start(self, request, pk=None):
        """Start a stream that has never run (NOT_STARTED -> STARTING)."""
        return _act(self, request, actions.start)

    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        """Pause a stream: DRAINING while readers close their windows, then PAUSED."""
        return _act(self, request, actions.pause)

    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        """Resume a PAUSED stream from its partitions' watermarks."""
        return _act(self, request, actions.resume)

    @action(detail=True, methods=["post"])
    def recover(self, request, pk=None):
        """Recover a FAILED_PERMANENTLY stream from its watermarks, from now, or from a timestamp."""
        return _act(self, request, actions.recover)

    def _window(self, request) -> tuple[Stream, dict]:
        stream = get_object_or_404(Stream, pk=self.kwargs["pk"])
        window = WindowSerializer(data=request.query_params)
        window.is_valid(raise_exception=True)
        return stream, window.validated_data

    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def lineage(self, request, pk=None):
        """Return the partitions alive in [since, until] as nodes and their parent-child edges."""
        stream, window = self._window(request)
        return Response(queries.lineage(stream, **window))

    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def lag(self, request, pk=None):
        """Return the stream's lag samples in [since, until], oldest first."""
        stream, window = self._window(request)
        return Response(queries.lag_series(stream, **window))


class StreamChildViewSet(CachedReadMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Base of the lists nested under one stream (/streams/{stream_pk}/...)."""

    def get_stream(self) -> Stream:
        """Return the stream named in the URL, or answer 404."""
        if not hasattr(self, "_stream"):
            self._stream = get_object_or_404(Stream, pk=self.kwargs["stream_pk"])
        return self._stream

    def get_queryset(self):
        """Return the rows of the stream in the URL."""
        return super().get_queryset().filter(stream=self.get_stream())


@extend_schema_view(list=extend_schema(parameters=[STREAM_PK]))
class StreamTransitionViewSet(StreamChildViewSet):
    """A stream's state moves, oldest first: from, to, when, by whom, why."""

    queryset = StreamTransition.objects.order_by("at", "id")
    serializer_class = StreamTransitionSerializer


@extend_schema_view(list=extend_schema(parameters=[STREAM_PK]))
class StreamErrorViewSet(StreamChildViewSet):
    """A stream's errors, newest first."""

    queryset = StreamError.objects.select_related("partition").order_by("-at", "-id")
    serializer_class = StreamErrorSerializer
    filterset_class = StreamErrorFilterSet
