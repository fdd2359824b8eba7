"""Streams API: CRUD, operator actions, lineage and lag, transitions and errors.

It shows each stream with its partitions' progress, so it sits above both apps.
"""

from __future__ import annotations

from contextlib import contextmanager

from django.conf import settings
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.shortcuts import get_object_or_404
from drf_spectacular.serializers import PolymorphicProxySerializerExtension
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import filters, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from cdcweb.dashboard import deletion, validation
from partitions import queries
from partitions.api.serializers import LagPointSerializer, LineageSerializer, WindowSerializer
from partitions.models import Partition
from partitions.sources import DEFAULT_KIND
from partitions.sources.base import SettingsError, SourceError
from partitions.watch import importing
from streams import actions
from streams.api.cache import CachedReadMixin
from streams.api.nested import STREAM_PK, StreamChildViewSet
from streams.models import AuditEntry, Stream, StreamError, StreamOperation, StreamTransition
from streams.transitions import TransitionNotAllowed

from .filtersets import StreamErrorFilterSet, StreamFilterSet
from .serializers import (
    AcceptedOperationSerializer,
    ActionSerializer,
    AuditEntrySerializer,
    BackfillSerializer,
    ConflictSerializer,
    ImportDatastreamSerializer,
    ImportedSerializer,
    RecoverSerializer,
    StreamErrorSerializer,
    StreamOperationSerializer,
    StreamSerializer,
    StreamTransitionSerializer,
    ValidationSerializer,
    attach_progress,
    kind_serializer,
    kind_serializers,
)


class AnyStreamSerializer(PolymorphicProxySerializer):
    """Every kind's stream, one schema each, told apart by source_kind: the kinds registered now.

    drf-spectacular keeps what a callable gave the first time; this asks KINDS at every schema.
    """

    @property
    def serializers(self):
        return kind_serializers()

    @serializers.setter
    def serializers(self, value) -> None:
        pass  # always the registered kinds' (above)


class AnyStreamSerializerExtension(PolymorphicProxySerializerExtension):
    """Map AnyStreamSerializer as drf-spectacular maps its base (extensions match exact classes)."""

    target_class = AnyStreamSerializer


ANY_STREAM = AnyStreamSerializer(
    component_name="AnyStream", serializers=[], resource_type_field_name="source_kind"
)
ACTION_RESPONSES = {
    200: OpenApiResponse(ANY_STREAM, description="a read stream: the stream, moved"),
    202: OpenApiResponse(
        AcceptedOperationSerializer,
        description="a watched stream: the operation its source carries out (poll its url until "
        "finished_at is set) and the stream as it is now (under stream)",
    ),
    400: OpenApiResponse(description="invalid arguments, with field errors"),
    409: OpenApiResponse(ConflictSerializer, description="the state machine forbids the move"),
}
WINDOW_REFUSED = OpenApiResponse(description="a bad time, or a window too long or holding too many rows")
# Examples include times out of range, so the schema fuzzing (tests/cdcweb/test_api_schema.py)
# sends them too: they must get a 400, never a 500.
TIME_EXAMPLES = [
    OpenApiExample(name, value=value)
    for name, value in (("relative", "-6h"), ("year 1", "0001-01-01T00:00:00Z"), ("far past", "-1000000d"))
]
WINDOW = [
    OpenApiParameter(
        "since", str, description="ISO 8601 with a zone, 'now' or relative like '-6h'", examples=TIME_EXAMPLES
    ),
    OpenApiParameter(
        "until", str, description="ISO 8601 with a zone, 'now' or relative like '-5m'", examples=TIME_EXAMPLES
    ),
]


DELETE_DATA = OpenApiParameter(
    "data",
    str,
    enum=list(deletion.DATA),
    description="what becomes of the files a stream has landed: keep (they stay, read by nothing) or "
    "purge (deleted); required once it has read anything, and it must be stopped first",
)


@contextmanager
def _bounded():
    """Turn a window that holds too many rows into a 400 that says to narrow it."""
    try:
        yield
    except queries.TooManyRows as error:
        raise ValidationError({"since": [str(error)]}) from None


ACTION_BODIES = {"recover": RecoverSerializer, "backfill": BackfillSerializer}


def _act(view, request, do) -> Response:
    """Run an operator action on the view's stream; 409 naming the state if the move is refused."""
    stream = view.get_object()
    serializer = ACTION_BODIES.get(view.action, ActionSerializer)(data=request.data)
    serializer.is_valid(raise_exception=True)
    try:
        stream = do(stream, by=request.user.get_username(), **serializer.validated_data)
    except TransitionNotAllowed as refused:
        body = {"detail": str(refused), "current_state": refused.current}
        return Response(body, status=status.HTTP_409_CONFLICT)
    except actions.InvalidAction as invalid:
        return Response({"non_field_errors": [str(invalid)]}, status=status.HTTP_400_BAD_REQUEST)
    body = view.get_serializer(stream).data
    operation = getattr(stream, "sent_operation", None)
    if operation is None:
        return Response(body)
    # A watched stream's action is the source's long-running operation: accepted, to be followed.
    accepted = AcceptedOperationSerializer(operation, context={"stream": body}).data
    return Response(accepted, status=status.HTTP_202_ACCEPTED, headers={"Location": accepted["url"]})


@extend_schema_view(
    list=extend_schema(responses=ANY_STREAM),
    retrieve=extend_schema(responses=ANY_STREAM),
    create=extend_schema(request=ANY_STREAM, responses={201: ANY_STREAM}),
    update=extend_schema(request=ANY_STREAM, responses=ANY_STREAM),
    partial_update=extend_schema(request=ANY_STREAM, responses=ANY_STREAM),
    validate=extend_schema(
        request=ANY_STREAM,
        responses={
            200: ValidationSerializer,
            400: OpenApiResponse(
                description="a setting is refused as a create would refuse it, with field errors"
            ),
        },
    ),
    start=extend_schema(request=ActionSerializer, responses=ACTION_RESPONSES),
    pause=extend_schema(request=ActionSerializer, responses=ACTION_RESPONSES),
    resume=extend_schema(request=ActionSerializer, responses=ACTION_RESPONSES),
    recover=extend_schema(request=RecoverSerializer, responses=ACTION_RESPONSES),
    backfill=extend_schema(request=BackfillSerializer, responses=ACTION_RESPONSES),
    import_datastream=extend_schema(
        request=ImportDatastreamSerializer,
        responses={
            201: ImportedSerializer,
            400: OpenApiResponse(description="a bad setting, or Datastream refused (its own words)"),
            503: OpenApiResponse(description="Datastream could not be reached; try again"),
        },
    ),
    lineage=extend_schema(parameters=WINDOW, responses={200: LineageSerializer, 400: WINDOW_REFUSED}),
    lag=extend_schema(parameters=WINDOW, responses={200: LagPointSerializer(many=True), 400: WINDOW_REFUSED}),
    destroy=extend_schema(
        parameters=[DELETE_DATA],
        responses={
            204: OpenApiResponse(description="deleted"),
            400: OpenApiResponse(description="the stream has read data: say data=keep or data=purge"),
            409: OpenApiResponse(ConflictSerializer, description="the stream is not stopped"),
        },
    ),
)
class StreamViewSet(CachedReadMixin, viewsets.ModelViewSet):
    """Change streams: list, create, read, change, delete; start, pause, resume, recover."""

    queryset = Stream.objects.order_by("name")
    serializer_class = StreamSerializer
    lookup_value_regex = r"\d+"
    filterset_class = StreamFilterSet
    filter_backends = [filters.SearchFilter, *viewsets.ModelViewSet.filter_backends]
    search_fields = ["name"]
    operate_actions = ("start", "pause", "resume", "recover", "backfill")
    cached_query_parameters = ("since", "until")  # the lineage's and lag's window (streams/api/cache.py)

    def get_serializer_class(self):
        """Return the serializer of the stream's kind for writes (create: the kind asked for)."""
        if self.action in ("create", "validate"):
            data = self.request.data
            asked = data.get("source_kind", DEFAULT_KIND) if hasattr(data, "get") else DEFAULT_KIND
            return (
                kind_serializers().get(asked, StreamSerializer)
                if isinstance(asked, str)
                else StreamSerializer
            )
        if self.action in ("update", "partial_update"):
            return kind_serializer(self.get_object().source_kind)
        return StreamSerializer

    def get_queryset(self):
        """Return the streams; a change locks its row, so it cannot interleave with a transition."""
        if self.action in ("update", "partial_update"):
            return self.queryset.select_for_update(no_key=True, of=("self",))
        return self.queryset

    def update(self, request, *args, **kwargs):
        """Change a stream in one transaction, under its row lock (PUT and PATCH)."""
        with transaction.atomic():
            return super().update(request, *args, **kwargs)

    def paginate_queryset(self, queryset):
        """Count and slice the streams, then read the progress of the page's streams only (one query)."""
        page = super().paginate_queryset(queryset)
        return attach_progress(list(queryset) if page is None else page)

    def destroy(self, request, *args, **kwargs):
        """Delete a stream (and its rows); once it has read, only stopped and with ?data=keep|purge."""
        stream = self.get_object()
        try:
            data = request.query_params.get("data", "")
            deletion.delete_stream(stream, data, by=request.user.get_username())
        except deletion.DeletionRefused as refused:
            if refused.conflict:
                body = {"detail": str(refused), "current_state": stream.state}
                return Response(body, status=status.HTTP_409_CONFLICT)
            return Response({"data": [str(refused)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @action(detail=False, methods=["post"])
    def validate(self, request):
        """Check a create's body against the source itself, creating nothing: each check's result."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        results = validation.validate(data["source_kind"], data["connection"], data.get("start_at"))
        return Response(validation.as_body(results))

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

    @action(detail=True, methods=["post"])
    def backfill(self, request, pk=None):
        """Start or stop one object's backfill (a watched stream: the source runs it)."""

        def do(stream, by, object, action, reason=""):
            return actions.backfill(stream, object, action, by=by)

        return _act(self, request, do)

    @action(detail=False, methods=["post"], url_path="import-datastream")
    def import_datastream(self, request):
        """Watch every Datastream stream of a location, or the one named by stream_id."""
        body = ImportDatastreamSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        given = body.validated_data
        try:
            done = importing.import_streams(
                given["project"],
                given["location"],
                given.get("stream_id") or None,
                log_retention_hours=given.get("log_retention_hours"),
            )
        except SettingsError as refused:
            return Response(refused.errors, status=status.HTTP_400_BAD_REQUEST)
        except SourceError as error:
            answer = status.HTTP_503_SERVICE_UNAVAILABLE if error.retryable else status.HTTP_400_BAD_REQUEST
            return Response({"detail": f"Datastream: {error}", "code": error.code}, status=answer)
        names = {"created": [s.name for s in done.created], "existing": [s.name for s in done.existing]}
        return Response(names, status=status.HTTP_201_CREATED)

    def _window(self, request) -> tuple[Stream, dict]:
        stream = get_object_or_404(Stream, pk=self.kwargs["pk"])
        window = WindowSerializer(data=request.query_params)
        window.is_valid(raise_exception=True)
        return stream, window.validated_data

    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def lineage(self, request, pk=None):
        """Return the partitions alive in [since, until] as nodes and their parent-child edges."""
        stream, window = self._window(request)
        with _bounded():
            return Response(queries.lineage(stream, **window, max_nodes=settings.CDC_API_MAX_LINEAGE_NODES))

    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def lag(self, request, pk=None):
        """Return the stream's lag samples in [since, until], oldest first."""
        stream, window = self._window(request)
        with _bounded():
            return Response(queries.lag_series(stream, **window, max_points=settings.CDC_API_MAX_LAG_POINTS))


@extend_schema_view(list=extend_schema(parameters=[STREAM_PK]))
class StreamTransitionViewSet(StreamChildViewSet):
    """A stream's state moves, oldest first: from, to, when, by whom, why."""

    queryset = StreamTransition.objects.order_by("at", "id")
    serializer_class = StreamTransitionSerializer


@extend_schema_view(list=extend_schema(parameters=[STREAM_PK]))
class StreamErrorViewSet(StreamChildViewSet):
    """A stream's errors, newest first."""

    queryset = StreamError.objects.order_by("-at", "-id")
    serializer_class = StreamErrorSerializer
    filterset_class = StreamErrorFilterSet

    def get_queryset(self):
        """Return the stream's errors, each with the id of its partition (found by its token)."""
        same = Partition.objects.filter(stream_id=OuterRef("stream_id"), token=OuterRef("partition_token"))
        return super().get_queryset().annotate(partition_id=Subquery(same.values("pk")[:1]))


@extend_schema_view(
    list=extend_schema(parameters=[STREAM_PK]),
    retrieve=extend_schema(parameters=[STREAM_PK]),
)
class StreamOperationViewSet(mixins.RetrieveModelMixin, StreamChildViewSet):
    """A watched stream's operations, newest first: what was asked, its progress, how it ended.

    One operation (``/operations/{id}/``) is what an accepted action's ``url`` points to.
    """

    queryset = StreamOperation.objects.order_by("-created_at", "-id")
    serializer_class = StreamOperationSerializer


class StreamAuditViewSet(StreamChildViewSet):
    """Operator actions on a stream and its partitions, newest first: who, when, what, the state before."""

    queryset = AuditEntry.objects.order_by("-at", "-id")
    serializer_class = AuditEntrySerializer
