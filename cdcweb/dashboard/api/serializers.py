"""Serializers of streams with their progress, their actions, transitions and errors."""

from __future__ import annotations

import functools
from datetime import datetime

from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from cdcweb.dashboard.kinds import SettingsError, api_field, clean_settings, frozen_changes
from cdcweb.dashboard.limits import end_misfit
from partitions.progress import StreamProgress, progress_of
from partitions.sources import DEFAULT_KIND, KINDS
from streams import audit, kinds
from streams.actions import BACKFILL_ACTIONS, RECOVERY_STRATEGIES
from streams.api.fields import StrictDateTimeField
from streams.models import (
    AuditEntry,
    Stream,
    StreamError,
    StreamOperation,
    StreamTransition,
    heartbeat_misfit,
)


def attach_progress(streams: list[Stream]) -> list[Stream]:
    """Set each stream's progress (the read model's, one query for all of them) for the serializer."""
    found = progress_of(streams)
    for stream in streams:
        stream.progress = found[stream.pk]
    return streams


COMMON_FIELDS = (
    "id", "name", "source_kind", "heartbeat_ms", "window_seconds", "start_at", "end_at",
    "state", "state_reason", "state_changed_at", "low_watermark", "lag_seconds",
    "holding_partition", "partitions_by_state", "data_records", "created_at", "updated_at",
)  # fmt: skip
# Fixed once reading began (besides the kind's settings): a new start would mix two streams' data.
FROZEN_FIELDS = ("start_at",)


class StreamSerializer(serializers.ModelSerializer):
    """A stream: its kind and that kind's settings, its window, its state and progress.

    Each kind has a subclass (kind_serializer) with the kind's connection settings as
    fields of their own, kept in Stream.connection and checked by the kind's clean();
    this base class represents any stream through its kind's subclass.
    """

    kind = None  # the subclass's SourceKind
    source_kind = serializers.ChoiceField(choices=kinds.CHOICES, default=DEFAULT_KIND)
    start_at = StrictDateTimeField(required=False)
    end_at = StrictDateTimeField(required=False, allow_null=True)
    low_watermark = serializers.SerializerMethodField()
    lag_seconds = serializers.SerializerMethodField()
    holding_partition = serializers.SerializerMethodField()
    partitions_by_state = serializers.SerializerMethodField()
    data_records = serializers.SerializerMethodField()

    class Meta:
        model = Stream
        fields = COMMON_FIELDS
        read_only_fields = ("state", "state_reason", "state_changed_at")

    def to_representation(self, instance: Stream) -> dict:
        """Represent the stream by its kind's fields, reading its progress if the view did not."""
        if self.kind is None:
            return kind_serializer(instance.source_kind)(instance, context=self.context).data
        if not hasattr(instance, "progress"):
            attach_progress([instance])
        return super().to_representation(instance)

    @staticmethod
    def _progress(stream: Stream) -> StreamProgress:
        return stream.progress

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_low_watermark(self, stream: Stream) -> datetime | None:
        """Return the oldest watermark of an unfinished partition (the end once all finished)."""
        return self._progress(stream).low_watermark

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_lag_seconds(self, stream: Stream) -> float | None:
        """Return how far the low watermark is behind now (or behind the stream's end)."""
        return self._progress(stream).lag_seconds

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_holding_partition(self, stream: Stream) -> str | None:
        """Return the token of the partition that holds the low watermark back, or None."""
        return self._progress(stream).holding_token

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}})
    def get_partitions_by_state(self, stream: Stream) -> dict[str, int]:
        """Return {partition state: count}, every state present."""
        return self._progress(stream).by_state

    def get_data_records(self, stream: Stream) -> int:
        """Return the data change records read over all partitions."""
        return self._progress(stream).data_records

    def validate_source_kind(self, value: str) -> str:
        """Refuse a kind whose streams cannot be created yet, saying why."""
        if KINDS[value].unavailable:
            raise serializers.ValidationError(KINDS[value].unavailable)
        return value

    def validate(self, attrs: dict) -> dict:
        """Refuse an end before the start, bad settings, and source changes once the stream started."""
        if self.kind is None:
            raise serializers.ValidationError({"source_kind": f"use one of {', '.join(KINDS)}"})
        instance = self.instance
        start = attrs.get("start_at", instance.start_at if instance else None) or timezone.now()
        end = attrs.get("end_at", instance.end_at if instance else None)
        if end is not None and end <= start:
            raise serializers.ValidationError(
                {"end_at": "the end timestamp must be after the start timestamp"}
            )
        misfit = heartbeat_misfit(attrs.get("heartbeat_ms", instance.heartbeat_ms if instance else None))
        if misfit:
            raise serializers.ValidationError({"heartbeat_ms": misfit})
        if "end_at" in attrs and (misfit := end_misfit(instance, end)):
            raise serializers.ValidationError({"end_at": misfit})
        before = instance.connection if instance else {}
        try:
            attrs["connection"] = clean_settings(self.kind.name, {**before, **attrs.pop("connection", {})})
        except SettingsError as refused:
            raise serializers.ValidationError(refused.errors) from None
        if instance is not None and instance.state != Stream.State.NOT_STARTED:
            changed = frozen_changes(self.kind.name, before, attrs["connection"])
            changed += [f for f in FROZEN_FIELDS if f in attrs and attrs[f] != getattr(instance, f)]
            if changed:
                message = f"cannot change once the stream has started (it is {instance.state})"
                raise serializers.ValidationError(dict.fromkeys(changed, message))
        return attrs

    def update(self, instance: Stream, validated_data: dict) -> Stream:
        """Save only the fields this request changed: a transition may be saving the state meanwhile."""
        changed = [name for name, value in validated_data.items() if getattr(instance, name) != value]
        before = {name: _jsonable(getattr(instance, name)) for name in changed}
        for name in changed:
            setattr(instance, name, validated_data[name])
        if changed:
            instance.save(update_fields=[*changed, "updated_at"])
            request = self.context.get("request")
            by = request.user.get_username() if request is not None else "api"
            audit.record(instance, "edit", by, f"changed {', '.join(changed)}", before)
        return instance


def _jsonable(value):
    """Return a field's value as the audit log stores it (times as ISO 8601)."""
    return value.isoformat() if isinstance(value, datetime) else value


@functools.cache
def _kind_serializer(kind) -> type[StreamSerializer]:
    """Return the stream serializer of one kind: the common fields and the kind's settings."""
    names = tuple(s.name for s in kind.settings)
    attrs = {s.name: api_field(s, source=f"connection.{s.name}") for s in kind.settings}
    attrs["source_kind"] = serializers.ChoiceField(choices=[kind.name], default=kind.name)
    attrs["Meta"] = type("Meta", (StreamSerializer.Meta,), {"fields": (*COMMON_FIELDS, *names)})
    attrs["kind"] = kind
    attrs["__doc__"] = f"A stream of kind {kind.name} ({kind.label}): settings, window, state, progress."
    name = "".join(part.title() for part in kind.name.split("_"))
    return type(f"{name}StreamSerializer", (StreamSerializer,), attrs)


def kind_serializer(name: str) -> type[StreamSerializer]:
    """Return the stream serializer of the kind named `name` (KeyError for an unknown kind)."""
    return _kind_serializer(KINDS[name])


def kind_serializers() -> dict[str, type[StreamSerializer]]:
    """Return every registered kind's stream serializer, by kind name (made once per kind)."""
    return {name: _kind_serializer(kind) for name, kind in KINDS.items()}


class CheckResultSerializer(serializers.Serializer):
    """One check of a stream's settings against its source: passed or not, and what it found."""

    check = serializers.CharField()
    ok = serializers.BooleanField()
    detail = serializers.CharField()
    setting = serializers.CharField(help_text="the setting the check is about (blank: none in particular)")


class ValidationSerializer(serializers.Serializer):
    """The answer of validate: ok when every check passed, and each check in the order it ran."""

    ok = serializers.BooleanField()
    checks = CheckResultSerializer(many=True)


class ActionSerializer(serializers.Serializer):
    """The optional body of start, pause and resume: why the operator acts."""

    reason = serializers.CharField(required=False, allow_blank=True, max_length=1000)


class RecoverSerializer(ActionSerializer):
    """How to recover a stream that failed permanently."""

    strategy = serializers.ChoiceField(
        choices=RECOVERY_STRATEGIES,
        help_text="watermark, now or timestamp; a watched stream: watermark (the source's next available "
        "position), now (its most recent) or position (the position given)",
    )
    timestamp = StrictDateTimeField(required=False, allow_null=True)
    position = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="strategy position (a watched stream): one field of Datastream's SpecificStartPosition, "
        'e.g. {"mysql_log_position": {"log_file": "mysql-bin.000123", "log_position": 4}} or '
        '{"oracle_scn_position": {"scn": 123456789}}, or its text form such as "oracle:123456789"',
    )

    def validate(self, attrs: dict) -> dict:
        """Require a past timestamp with strategy "timestamp", and none with the others."""
        if attrs.get("position") is not None and attrs["strategy"] != "position":
            message = f"a position is only used with strategy 'position', not {attrs['strategy']!r}"
            raise serializers.ValidationError({"position": message})
        if attrs["strategy"] == "position" and attrs.get("position") is None:
            raise serializers.ValidationError({"position": "strategy 'position' needs a position"})
        timestamp = attrs.get("timestamp")
        if attrs["strategy"] == "timestamp":
            if timestamp is None:
                raise serializers.ValidationError({"timestamp": "strategy 'timestamp' needs a timestamp"})
            if timestamp > timezone.now():
                raise serializers.ValidationError({"timestamp": "the timestamp is in the future"})
        elif timestamp is not None:
            message = f"a timestamp is only used with strategy 'timestamp', not {attrs['strategy']!r}"
            raise serializers.ValidationError({"timestamp": message})
        return attrs


class ConflictSerializer(serializers.Serializer):
    """A refused state move: the message names the stream's current state."""

    detail = serializers.CharField()
    current_state = serializers.ChoiceField(choices=Stream.State.choices)


class StreamTransitionSerializer(serializers.ModelSerializer):
    """One logged state move."""

    class Meta:
        model = StreamTransition
        fields = ("id", "from_state", "to_state", "at", "by", "reason")


class AuditEntrySerializer(serializers.ModelSerializer):
    """One operator action on the stream or one of its partitions (partition 0: the stream itself)."""

    class Meta:
        model = AuditEntry
        fields = ("id", "at", "by", "action", "detail", "partition_id", "partition_token", "before")


class StreamErrorSerializer(serializers.ModelSerializer):
    """One error met while reading the stream, with its partition (id and token) if any."""

    partition = serializers.IntegerField(source="partition_id", allow_null=True, read_only=True)
    partition_token = serializers.SerializerMethodField()

    class Meta:
        model = StreamError
        fields = (
            "id", "at", "kind", "code", "message", "attempt", "partition", "partition_token",
            "uuid", "details", "last_seen_at",
        )  # fmt: skip

    def get_partition_token(self, error: StreamError) -> str | None:
        """Return the token of the partition the error happened in, or None."""
        return error.partition_token or None


class ImportDatastreamSerializer(serializers.Serializer):
    """Which Datastream streams to watch: every stream of a location, or the one named."""

    project = serializers.CharField(max_length=100)
    location = serializers.CharField(max_length=100)
    stream_id = serializers.CharField(max_length=100, required=False, allow_blank=True)
    log_retention_hours = serializers.IntegerField(required=False, min_value=1, max_value=24 * 366)


class ImportedSerializer(serializers.Serializer):
    """What an import registered, and which streams were watched already."""

    created = serializers.ListField(child=serializers.CharField())
    existing = serializers.ListField(child=serializers.CharField())


class BackfillSerializer(ActionSerializer):
    """Start or stop the backfill of one object (source table) of a watched stream."""

    object = serializers.CharField(max_length=200, help_text="the object's ID, the last part of its name")
    action = serializers.ChoiceField(choices=BACKFILL_ACTIONS)


class StreamOperationSerializer(serializers.ModelSerializer):
    """One action carried out by a watched stream's source: its progress, outcome or refusal.

    ``status`` is PENDING (no worker took it yet), RUNNING (the source's long-running operation
    is followed; ``message`` and ``elapsed_seconds`` are its progress), then DONE, REFUSED (in
    the source's words) or FAILED; ``url`` is where to poll it until ``finished_at`` is set.
    """

    url = serializers.SerializerMethodField()

    class Meta:
        model = StreamOperation
        fields = (
            "id", "url", "action", "target", "arguments", "by", "status", "message", "code", "operation",
            "elapsed_seconds", "created_at", "finished_at",
        )  # fmt: skip

    def get_url(self, operation: StreamOperation) -> str:
        """Return the operation's own URL (the API path), to poll it to its end."""
        return reverse("stream-operation-detail", args=[operation.stream_id, operation.pk])


class AcceptedOperationSerializer(StreamOperationSerializer):
    """A watched stream's action, accepted (202): the operation to follow, and the stream as it is now."""

    stream = serializers.SerializerMethodField()

    class Meta(StreamOperationSerializer.Meta):
        fields = (*StreamOperationSerializer.Meta.fields, "stream")

    @extend_schema_field(StreamSerializer)
    def get_stream(self, operation: StreamOperation) -> dict:
        """Return the stream as the action left it, as the view serialized it (the source moves it)."""
        return self.context["stream"]
