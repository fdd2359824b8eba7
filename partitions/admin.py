"""Read-only admin for partitions, their lineage and lag samples: the pipeline owns these rows."""

from __future__ import annotations

from django.contrib import admin

from .models import LagSample, Partition, PartitionEdge


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
