"""Admin for streams: their state, lag and partitions at a glance, and the operator actions.

It shows partitions' progress, so it sits in the dashboard app, above streams and partitions.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect

from partitions.admin import ReadOnly, ReadOnlyAdmin
from partitions.progress import StreamProgress, progress
from partitions.sources import DEFAULT_KIND, KINDS
from streams import actions, audit
from streams.access import can_operate
from streams.models import AuditEntry, Stream, StreamError, StreamOperation, StreamTransition
from streams.transitions import TransitionNotAllowed

from . import deletion
from .forms import COMMON_FIELDS, stream_form

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


class ReadOnlyInline(ReadOnly, admin.TabularInline):
    """An inline that shows rows and never lets anyone edit them."""

    extra = 0
    can_delete = False
    show_change_link = False


class StreamTransitionInline(ReadOnlyInline):
    model = StreamTransition
    fields = readonly_fields = ("at", "from_state", "to_state", "by", "reason")
    ordering = ("-at", "-id")


class StreamOperationInline(ReadOnlyInline):
    """A watched stream's operations: what was asked of its source, its progress, how it ended."""

    model = StreamOperation
    fields = readonly_fields = (
        "created_at",
        "action",
        "target",
        "by",
        "status",
        "message",
        "elapsed_seconds",
    )


class StreamErrorInline(ReadOnlyInline):
    model = StreamError
    fields = readonly_fields = ("at", "kind", "code", "message", "attempt", "partition_token")


class AuditEntryInline(ReadOnlyInline):
    model = AuditEntry
    fields = readonly_fields = ("at", "by", "action", "detail", "partition_id", "partition_token", "before")
    ordering = ("-at", "-id")


@admin.register(Stream)
class StreamAdmin(admin.ModelAdmin):
    list_display = ("name", "source_kind", "source", "state", "state_reason", "lag", "partitions", "records")
    list_filter = ("state", "source_kind")
    search_fields = ("name",)
    readonly_fields = STATE_FIELDS
    inlines = (StreamTransitionInline, StreamOperationInline, StreamErrorInline)
    actions = (
        "start_streams",
        "pause_streams",
        "resume_streams",
        "recover_from_watermark",
        "recover_from_now",
    )

    def get_inlines(self, request, obj):
        """Return the inlines and the audit log; a stream being added has no operations nor log yet."""
        inlines = super().get_inlines(request, obj)
        if obj is None:
            return tuple(i for i in inlines if i is not StreamOperationInline)
        return (*inlines, AuditEntryInline)

    def get_form(self, request, obj=None, change=False, **kwargs):
        """Return the form of the stream's kind (when adding: ?source_kind=, else a Spanner change stream)."""
        kind = obj.source_kind if obj is not None else request.GET.get("source_kind", DEFAULT_KIND)
        kwargs["form"] = stream_form(kind if kind in KINDS else DEFAULT_KIND)
        kwargs["fields"] = None
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request, obj=None):
        """Show the common fields, the kind's settings, then the state."""
        kind = obj.source_kind if obj is not None else request.GET.get("source_kind", DEFAULT_KIND)
        kind = KINDS.get(kind, KINDS[DEFAULT_KIND])
        settings = tuple(s.name for s in kind.settings)
        return (
            (None, {"fields": COMMON_FIELDS}),
            (f"{kind.label} settings", {"fields": settings}),
            ("State", {"fields": STATE_FIELDS}),
        )

    def save_model(self, request, obj, form, change):
        """Save the stream; an edit goes to the audit log with the values it replaced."""
        if change and form.changed_data:
            old = Stream.objects.filter(pk=obj.pk).values().first() or {}
            before = {name: str(old.get(name, "")) for name in form.changed_data if name in old}
            super().save_model(request, obj, form, change)
            detail = f"changed {', '.join(form.changed_data)} in the admin"
            audit.record(obj, "edit", request.user.get_username(), detail, before)
            return
        super().save_model(request, obj, form, change)

    def get_actions(self, request):
        """Offer the operator actions, not the bulk delete: a stream is deleted one at a time, saying
        what becomes of its data (cdcweb/dashboard/deletion.py)."""
        found = super().get_actions(request)
        found.pop("delete_selected", None)
        return found

    def get_deleted_objects(self, objs, request):
        """Count what goes with the stream (its partitions and samples may be many) instead of listing it.

        Deleting needs streams.delete_stream alone, as in the API: the rows below are the
        stream's own and go with it.
        """
        (stream,) = objs
        counts = {
            "partitions": stream.partitions.count(),
            "lag samples": stream.lag_samples.count(),
            "transitions": stream.transitions.count(),
            "errors": stream.errors.count(),
            "reports": stream.reports.count(),
            "alerts": stream.alerts.count(),
        }
        return [str(stream)], {"streams": 1, **{k: n for k, n in counts.items() if n}}, set(), []

    def delete_view(self, request, object_id, extra_context=None):
        """Ask what becomes of the stream's data, then delete it through the one rule (or say why not)."""
        stream = self.get_object(request, unquote(object_id))
        if stream is not None and request.method == "POST" and request.POST.get("post"):
            if not self.has_delete_permission(request, stream):
                raise PermissionDenied
            try:
                data, by = request.POST.get("data", ""), request.user.get_username()
                done = deletion.delete_stream(stream, data, by)
            except deletion.DeletionRefused as refused:
                self.message_user(request, str(refused), messages.ERROR)
                return redirect(request.path)
            self.message_user(request, f"Deleted stream {done.name}: data {done.data}.", messages.SUCCESS)
            return redirect("admin:streams_stream_changelist")
        context = {**(extra_context or {}), "data_choices": deletion.DATA}
        if stream is not None:
            context |= {"has_read": deletion.has_read(stream), "refusal": deletion.refusal(stream, "keep")}
        return super().delete_view(request, object_id, context)

    @admin.display(description="source")
    def source(self, obj: Stream) -> str:
        return KINDS[obj.source_kind].describe(obj.connection)

    def has_operate_permission(self, request) -> bool:
        """Return True if the user may act on streams (the same rule as the pages and the API)."""
        return can_operate(request.user)

    def _progress(self, obj: Stream) -> StreamProgress:
        # One read of the progress per row, shared by the columns below (one query).
        if not hasattr(obj, "_admin_progress"):
            obj._admin_progress = progress(obj)
        return obj._admin_progress

    @admin.display(description="lag")
    def lag(self, obj: Stream) -> str:
        seconds = self._progress(obj).lag_seconds
        return "-" if seconds is None else f"{seconds:,.1f} s"

    @admin.display(description="partitions by state")
    def partitions(self, obj: Stream) -> str:
        counts = self._progress(obj).by_state
        return " / ".join(f"{state.lower()} {n}" for state, n in counts.items() if n) or "-"

    @admin.display(description="data records")
    def records(self, obj: Stream) -> str:
        return f"{self._progress(obj).data_records:,}"

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

    @admin.action(description="Start selected streams", permissions=["operate"])
    def start_streams(self, request, queryset):
        self._run(request, queryset, "Started", actions.start)

    @admin.action(description="Pause selected streams (drain, then pause)", permissions=["operate"])
    def pause_streams(self, request, queryset):
        self._run(request, queryset, "Pausing", actions.pause)

    @admin.action(description="Resume selected streams", permissions=["operate"])
    def resume_streams(self, request, queryset):
        self._run(request, queryset, "Resumed", actions.resume)

    @admin.action(
        description="Recover selected failed streams from their watermarks", permissions=["operate"]
    )
    def recover_from_watermark(self, request, queryset):
        self._run(request, queryset, "Recovering", lambda s, by: actions.recover(s, "watermark", by=by))

    @admin.action(
        description="Recover selected failed streams from now (skips the gap)", permissions=["operate"]
    )
    def recover_from_now(self, request, queryset):
        self._run(request, queryset, "Recovering", lambda s, by: actions.recover(s, "now", by=by))


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ("at", "stream", "action", "by", "partition_id", "detail")
    list_filter = ("action",)
    search_fields = ("stream__name", "by", "partition_token")
    list_select_related = ("stream",)


@admin.register(StreamTransition)
class StreamTransitionAdmin(ReadOnlyAdmin):
    list_display = ("at", "stream", "from_state", "to_state", "by", "reason")
    list_filter = ("to_state", "from_state")
    search_fields = ("stream__name", "by", "reason")
