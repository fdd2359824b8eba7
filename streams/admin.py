"""Admin for streams: their state, lag and partitions at a glance, and the operator actions."""

from __future__ import annotations

from django.contrib import admin, messages

from streams import actions
from streams.models import Stream, StreamError, StreamTransition
from streams.status import stream_status
from streams.transitions import TransitionNotAllowed

CONFIG_FIELDS = (
    "name",
    "source_kind",
    "project",
    "instance",
    "database",
    "change_stream",
    "dialect",
    "heartbeat_ms",
    "start_at",
    "end_at",
    "window_seconds",
    "emulator_host",
)
STATE_FIELDS = (
    "state",
    "state_reason",
    "state_changed_at",
    "consecutive_failures",
    "next_retry_at",
    "paused_at",
    "resume_from",
    "created_at",
    "updated_at",
)


class ReadOnlyInline(admin.TabularInline):
    """An inline that shows rows and never lets anyone edit them."""

    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class StreamTransitionInline(ReadOnlyInline):
    model = StreamTransition
    fields = readonly_fields = ("at", "from_state", "to_state", "by", "reason")
    ordering = ("-at", "-id")


class StreamErrorInline(ReadOnlyInline):
    model = StreamError
    fields = readonly_fields = ("at", "kind", "code", "message", "attempt", "partition")


@admin.register(Stream)
class StreamAdmin(admin.ModelAdmin):
    list_display = ("name", "state", "state_reason", "lag", "partitions", "records", "change_stream")
    list_filter = ("state", "dialect", "source_kind")
    search_fields = ("name", "project", "instance", "database", "change_stream")
    readonly_fields = STATE_FIELDS
    fieldsets = ((None, {"fields": CONFIG_FIELDS}), ("State", {"fields": STATE_FIELDS}))
    inlines = (StreamTransitionInline, StreamErrorInline)
    actions = (
        "start_streams",
        "pause_streams",
        "resume_streams",
        "recover_from_watermark",
        "recover_from_now",
    )

    def get_readonly_fields(self, request, obj=None):
        """Freeze the connection settings once a stream has started: its partitions depend on them."""
        if obj is not None and obj.state != Stream.State.NOT_STARTED:
            return CONFIG_FIELDS + STATE_FIELDS
        return STATE_FIELDS

    def _status(self, obj: Stream) -> dict:
        # One status per row, shared by the columns below (three queries per stream).
        if not hasattr(obj, "_admin_status"):
            obj._admin_status = stream_status(obj)
        return obj._admin_status

    @admin.display(description="lag")
    def lag(self, obj: Stream) -> str:
        seconds = self._status(obj)["lag_seconds"]
        return "-" if seconds is None else f"{seconds:,.1f} s"

    @admin.display(description="partitions by state")
    def partitions(self, obj: Stream) -> str:
        counts = self._status(obj)["partitions_by_state"]
        return " / ".join(f"{state.lower()} {n}" for state, n in counts.items() if n) or "-"

    @admin.display(description="data records")
    def records(self, obj: Stream) -> str:
        return f"{self._status(obj)['data_records']:,}"

    def _run(self, request, queryset, verb: str, act) -> None:
        """Apply act to every selected stream; report each refusal instead of failing the page."""
        done = []
        for stream in queryset:
            try:
                act(stream, request.user.get_username())
            except (TransitionNotAllowed, actions.InvalidAction) as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                done.append(stream.name)
        if done:
            self.message_user(request, f"{verb}: {', '.join(done)}", messages.SUCCESS)

    @admin.action(description="Start selected streams")
    def start_streams(self, request, queryset):
        self._run(request, queryset, "Started", actions.start)

    @admin.action(description="Pause selected streams (drain, then pause)")
    def pause_streams(self, request, queryset):
        self._run(request, queryset, "Pausing", actions.pause)

    @admin.action(description="Resume selected streams")
    def resume_streams(self, request, queryset):
        self._run(request, queryset, "Resumed", actions.resume)

    @admin.action(description="Recover selected failed streams from their watermarks")
    def recover_from_watermark(self, request, queryset):
        self._run(request, queryset, "Recovering", lambda s, by: actions.recover(s, "watermark", by=by))

    @admin.action(description="Recover selected failed streams from now (skips the gap)")
    def recover_from_now(self, request, queryset):
        self._run(request, queryset, "Recovering", lambda s, by: actions.recover(s, "now", by=by))


@admin.register(StreamTransition)
class StreamTransitionAdmin(admin.ModelAdmin):
    list_display = ("at", "stream", "from_state", "to_state", "by", "reason")
    list_filter = ("to_state", "from_state")
    search_fields = ("stream__name", "by", "reason")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
