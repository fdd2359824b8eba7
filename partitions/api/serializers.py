"""Serializers of partitions, the lineage graph and the lag series."""

from __future__ import annotations

from datetime import UTC, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from partitions.models import Partition
from partitions.progress import partition_lag
from streams.api.fields import StrictDateTimeField
from streams.times import parse_time


class FlexibleTimeField(serializers.Field):
    """A query time: ISO 8601 with a zone, 'now', or relative to now like '-6h'."""

    def to_internal_value(self, data):
        """Parse the time, or raise a field error that says what is accepted."""
        try:
            return parse_time(str(data))
        except ValueError as error:
            raise serializers.ValidationError(str(error)) from None

    def to_representation(self, value):
        """Return the time as ISO 8601."""
        return value.isoformat()


class WindowSerializer(serializers.Serializer):
    """?since=&until=: the time window of the lineage and the lag series, at most CDC_API_MAX_WINDOW_DAYS."""

    since = FlexibleTimeField(required=False)
    until = FlexibleTimeField(required=False)

    def validate(self, attrs: dict) -> dict:
        """Refuse a window that ends before it begins, or that is longer than the limit."""
        if "since" in attrs and "until" in attrs and attrs["until"] < attrs["since"]:
            raise serializers.ValidationError({"until": "until is before since"})
        days = settings.CDC_API_MAX_WINDOW_DAYS
        # A minute's slack: "-7d" was resolved against a "now" read a moment before this one.
        limit = timedelta(days=days, minutes=1)
        if "since" in attrs and attrs.get("until", timezone.now()) - attrs["since"] > limit:
            raise serializers.ValidationError({"since": f"the window is longer than {days} days: narrow it"})
        return attrs


class UtcDateTimeField(serializers.DateTimeField):
    """DRF's DateTimeField output (ISO 8601, "Z" for UTC) for the project's fixed UTC zone, faster.

    A page of 50 partitions has 450 timestamps; DRF looks up the active time zone
    for each (thread-local reads), about 3 ms a page. Settings fix TIME_ZONE to UTC
    and nothing activates another zone, so every value is printed in UTC directly.
    """

    def to_representation(self, value):
        """Return the time as ISO 8601 in UTC, "Z" for the zone, or None."""
        if not value:
            return None
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


class PartitionSerializer(serializers.ModelSerializer):
    """A partition's state, interval, watermark, lag and counters."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.DateTimeField: UtcDateTimeField,
    }
    lag_seconds = serializers.SerializerMethodField()

    class Meta:
        model = Partition
        fields = (
            "id", "stream", "token", "label", "state", "start_at", "end_at", "watermark", "lag_seconds",
            "data_records", "mods", "heartbeats", "bytes", "created_at", "scheduled_at", "running_at",
            "finished_at", "last_progress_at", "lease_owner", "lease_expires_at", "stalled", "stall_rule",
        )  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.DOUBLE)
    def get_lag_seconds(self, partition: Partition) -> float:
        """Return how far the watermark is behind now (or the stream's end); 0 once finished."""
        now = timezone.now()
        end = getattr(partition, "stream_end_at", None)
        horizon = min(now, end) if end else now  # progress.horizon, from the annotated end
        return partition_lag(partition.state, partition.watermark, horizon) or 0.0


class PartitionDetailSerializer(PartitionSerializer):
    """A partition with its lineage neighbours and the evidence of a stall."""

    parent_tokens = serializers.SerializerMethodField()
    child_tokens = serializers.SerializerMethodField()
    parent_ids = serializers.SerializerMethodField()
    child_ids = serializers.SerializerMethodField()

    class Meta(PartitionSerializer.Meta):
        fields = (*PartitionSerializer.Meta.fields, "stall_evidence", "parent_ids", "parent_tokens",
                  "child_ids", "child_tokens")  # fmt: skip
        read_only_fields = fields

    def get_parent_tokens(self, partition: Partition) -> list[str]:
        """Return the tokens of the partitions this one was split or merged from."""
        return [edge.parent.token for edge in partition.parent_edges.all()]

    def get_child_tokens(self, partition: Partition) -> list[str]:
        """Return the tokens of the partitions this one split or merged into."""
        return [edge.child.token for edge in partition.child_edges.all()]

    def get_parent_ids(self, partition: Partition) -> list[int]:
        """Return the ids of the parents."""
        return [edge.parent_id for edge in partition.parent_edges.all()]

    def get_child_ids(self, partition: Partition) -> list[int]:
        """Return the ids of the children."""
        return [edge.child_id for edge in partition.child_edges.all()]


class LineageNodeSerializer(serializers.Serializer):
    """One partition in the lineage graph."""

    id = serializers.IntegerField()
    token = serializers.CharField()
    label = serializers.CharField(help_text="how pages show the partition: a row range, a shard")
    state = serializers.ChoiceField(choices=Partition.State.choices)
    start_at = serializers.DateTimeField()
    end_at = serializers.DateTimeField(allow_null=True)
    watermark = serializers.DateTimeField()
    lag_seconds = serializers.FloatField()
    data_records = serializers.IntegerField()
    mods = serializers.IntegerField()
    heartbeats = serializers.IntegerField()
    bytes = serializers.IntegerField()
    stalled = serializers.BooleanField()
    parents = serializers.IntegerField(help_text="how many parents: more than one is a merge")


class LineageEdgeSerializer(serializers.Serializer):
    """One parent-to-child link (ids of lineage nodes)."""

    parent = serializers.IntegerField()
    child = serializers.IntegerField()


class LineageSerializer(serializers.Serializer):
    """The partitions of a time window and the links between them."""

    nodes = LineageNodeSerializer(many=True)
    edges = LineageEdgeSerializer(many=True)


class LagPointSerializer(serializers.Serializer):
    """One lag sample (raw, or the worst of a downsampled span)."""

    at = serializers.DateTimeField()
    lag_seconds = serializers.FloatField()
    low_watermark = serializers.DateTimeField(allow_null=True)
    p95_partition_lag = serializers.FloatField(allow_null=True)
    max_partition_lag = serializers.FloatField(allow_null=True)
    data_records = serializers.IntegerField()
    resolution_seconds = serializers.IntegerField()
    holding_partition = serializers.CharField(allow_null=True, help_text="token of the partition holding lag")
    holding_partition_id = serializers.IntegerField(allow_null=True)


class RereadSerializer(serializers.Serializer):
    """The body of a re-read: the time to read the partition again from (its start at the earliest)."""

    locals()["from"] = StrictDateTimeField(help_text="ISO 8601 with a zone; not before the partition's start")


class RefusedSerializer(serializers.Serializer):
    """A partition action that does not apply: why, and the partition's state."""

    detail = serializers.CharField()
    current_state = serializers.ChoiceField(choices=Partition.State.choices)
