"""Reports API: list and create Spark reports, read one with its results, export a table as CSV."""

from __future__ import annotations

import django_filters
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from streams.api.fields import StrictDateTimeField
from streams.models import Stream

from . import services as report_services
from .models import Report
from .output import table_columns_rows, to_csv

TABLE = OpenApiParameter("table", str, required=True, description="a result table's name, e.g. throughput")
CSV_RESPONSES = {
    (200, "text/csv"): OpenApiTypes.STR,
    400: OpenApiResponse(description="no table named"),
    404: OpenApiResponse(description="no such report, or no such table in it"),
}


class ReportSerializer(serializers.ModelSerializer):
    """A report's range, status and progress (the list leaves its results out)."""

    stream_name = serializers.CharField(source="stream.name", read_only=True)
    percent = serializers.IntegerField(read_only=True)
    # Plain text: an enum here would collide with StreamError's "kind" in the schema.
    kind = serializers.CharField(read_only=True)

    class Meta:
        model = Report
        fields = (
            "id", "stream", "stream_name", "since", "until", "kind", "status", "progress_done",
            "progress_total", "percent", "step", "error", "requested_by", "created_at", "started_at",
            "finished_at",
        )  # fmt: skip
        read_only_fields = fields


class ReportDetailSerializer(ReportSerializer):
    """A report with its summary, result tables ({name: [rows]}) and the price model it assumed."""

    class Meta(ReportSerializer.Meta):
        fields = (*ReportSerializer.Meta.fields, "summary", "results", "assumptions")
        read_only_fields = fields


class ReportCreateSerializer(serializers.Serializer):
    """What an operator asks for: a stream, a commit-time range [since, until) and which reports."""

    stream = serializers.PrimaryKeyRelatedField(queryset=Stream.objects.all())
    since = StrictDateTimeField()
    until = StrictDateTimeField()
    kind = serializers.ChoiceField(choices=Report.Kind.choices, default=Report.Kind.ALL)

    def validate(self, attrs: dict) -> dict:
        """Refuse an empty, reversed, too long or future range with a field error."""
        errors = report_services.range_errors(attrs["since"], attrs["until"])
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class ReportFilterSet(django_filters.FilterSet):
    """Filter reports by stream and status (repeatable: ?status=RUNNING&status=QUEUED)."""

    status = django_filters.MultipleChoiceFilter(choices=Report.Status.choices)

    class Meta:
        model = Report
        fields = ("stream", "status")


def csv_response(report: Report, table: str | None):
    """Return one result table of the report as a CSV download (400 unnamed, 404 unknown)."""
    if not table:
        return Response({"table": ["name a result table"]}, status=status.HTTP_400_BAD_REQUEST)
    found = table_columns_rows(report, table)
    if found is None:
        return Response({"detail": f"this report has no table {table!r}"}, status=status.HTTP_404_NOT_FOUND)
    response = HttpResponse(to_csv(*found), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="report-{report.pk}-{table}.csv"'
    return response


@extend_schema_view(
    create=extend_schema(
        request=ReportCreateSerializer,
        responses={201: ReportSerializer, 400: OpenApiResponse(description="field errors")},
    ),
    csv=extend_schema(parameters=[TABLE], responses=CSV_RESPONSES),
)
class ReportViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Spark reports of streams: viewers read them, operators start them."""

    queryset = Report.objects.select_related("stream").order_by("-created_at", "-id")
    lookup_value_regex = r"\d+"
    filterset_class = ReportFilterSet
    operate_actions = ("create",)

    def get_serializer_class(self):
        """Return the list, detail or create serializer of the action."""
        return {"retrieve": ReportDetailSerializer, "create": ReportCreateSerializer}.get(
            self.action, ReportSerializer
        )

    def get_queryset(self):
        """Leave the (large) result tables out of lists."""
        queryset = super().get_queryset()
        return queryset.defer("results", "summary") if self.action == "list" else queryset

    def perform_content_negotiation(self, request, force=False):
        """Let ``?format=csv`` through to retrieve, which answers with a CSV table itself."""
        if request.query_params.get("format") == "csv":
            return super().perform_content_negotiation(request, force=True)
        return super().perform_content_negotiation(request, force)

    def create(self, request, *args, **kwargs):
        """Create a QUEUED report for the range and enqueue its Spark job."""
        serializer = ReportCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        report = report_services.create_report(
            data["stream"], data["since"], data["until"], by=request.user.get_username(), kind=data["kind"]
        )
        return Response(ReportSerializer(report).data, status=status.HTTP_201_CREATED)

    def retrieve(self, request, *args, **kwargs):
        """Return the report with its results; ``?format=csv&table=NAME`` returns one table as CSV."""
        if request.query_params.get("format") == "csv":
            return csv_response(self.get_object(), request.query_params.get("table"))
        return super().retrieve(request, *args, **kwargs)

    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def csv(self, request, pk=None):
        """Return one result table of the report as CSV (``?table=NAME``)."""
        return csv_response(self.get_object(), request.query_params.get("table"))
