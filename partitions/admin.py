"""Read-only admin for partitions, their lineage and lag samples: the pipeline owns these rows.

Operators act on selected partitions: release a lease, re-read from the start, and, for a
watched stream's objects (a Datastream stream's tables are its partitions), start or stop
their backfills, each sent to the source as an operation (streams/actions.py).
"""

from __future__ import annotations

from django.contrib import admin, messages

from streams import actions as stream_actions
from streams.access import can_operate
from streams.transitions import TransitionNotAllowed

from .models import LagSample, Partition, PartitionEdge
from .pipeline import partition_actions
from .pipeline.queue import NAMED


class ReadOnly:
    """Show rows; never add, change or delete them by hand: the pipeline, beat or a delivery owns them.

    A mixin for model admins and inlines alike (the alerts' and the streams' admins use it too).
    """

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(ReadOnly, admin.ModelAdmin):
    """A model admin that only shows rows."""


@admin.register(Partition)
class PartitionAdmin(ReadOnlyAdmin):
    list_display = ("token", "stream", "state", "watermark", "data_records", "lease_owner", "stalled")
    list_filter = ("state", "stalled", "stream")
    search_fields = ("token", "stream__name")
    list_select_related = ("stream",)
    actions = ("release_leases", "reread_from_start", "start_backfills", "stop_backfills")

    def has_operate_permission(self, request) -> bool:
        """Return True if the user may act on streams (the same rule as the pages and the API)."""
        return can_operate(request.user)

    def _run(self, request, queryset, verb: str, act) -> None:
        """Apply act to every selected partition; report each refusal instead of failing the page."""
        done = []
        for partition in queryset:
            try:
                act(partition, request.user.get_username())
            except (
                partition_actions.ActionRefused,
                stream_actions.InvalidAction,
                TransitionNotAllowed,
            ) as refused:
                self.message_user(request, str(refused), messages.ERROR)
            else:
                done.append(str(partition.pk))
        if done:
            self.message_user(request, f"{verb}: partitions {', '.join(done)}", messages.SUCCESS)

    @admin.action(description="Release the leases of selected partitions", permissions=["operate"])
    def release_leases(self, request, queryset):
        self._run(
            request,
            queryset,
            "Leases released",
            lambda p, by: partition_actions.release_lease(p.pk, by, NAMED),
        )

    @admin.action(description="Re-read selected partitions from their start", permissions=["operate"])
    def reread_from_start(self, request, queryset):
        self._run(
            request,
            queryset,
            "Re-reading",
            lambda p, by: partition_actions.reread(p.pk, p.start_at, by, NAMED),
        )

    @admin.action(
        description="Start the backfill of selected objects (watched streams)", permissions=["operate"]
    )
    def start_backfills(self, request, queryset):
        self._backfill(request, queryset, "start")

    @admin.action(
        description="Stop the backfill of selected objects (watched streams)", permissions=["operate"]
    )
    def stop_backfills(self, request, queryset):
        self._backfill(request, queryset, "stop")

    def _backfill(self, request, queryset, what: str) -> None:
        """Send a backfill start or stop of each selected object to its stream's source."""
        self._run(
            request,
            queryset.select_related("stream"),
            f"Backfill {what} sent to the source (progress on the stream's page)",
            lambda p, by: stream_actions.backfill(p.stream, p.token, what, by=by),
        )


@admin.register(PartitionEdge)
class PartitionEdgeAdmin(ReadOnlyAdmin):
    list_display = ("id", "stream", "parent", "child")
    list_filter = ("stream",)
    search_fields = ("parent__token", "child__token")
    list_select_related = ("stream", "parent", "child")


@admin.register(LagSample)
class LagSampleAdmin(ReadOnlyAdmin):
    list_display = ("at", "stream", "lag_seconds", "low_watermark", "resolution_seconds", "data_records")
    list_filter = ("stream", "resolution_seconds")
    list_select_related = ("stream",)
