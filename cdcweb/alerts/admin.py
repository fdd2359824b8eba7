"""Admin for alerts: rules, channels (secrets write-only) and silences to edit; alerts and attempts shown."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from partitions.admin import ReadOnly

from .forms import ChannelForm
from .models import Alert, AlertRule, Channel, DeliveryAttempt, Silence
from .rules import rule_errors


class AlertRuleAdminForm(forms.ModelForm):
    """The rule's fields, refused as the pages and the API refuse them."""

    class Meta:
        model = AlertRule
        fields = "__all__"

    def clean(self) -> dict:
        data = super().clean()
        for field, message in rule_errors(
            data.get("kind", ""), data.get("for_minutes"), data.get("retention_hours")
        ).items():
            self.add_error(field, message)
        return data


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    form = AlertRuleAdminForm
    list_display = (
        "name",
        "kind",
        "stream",
        "threshold_seconds",
        "for_minutes",
        "retention_hours",
        "enabled",
    )
    list_filter = ("kind", "enabled", "stream")
    search_fields = ("name",)
    filter_horizontal = ("channels",)
    readonly_fields = ("created_by", "created_at", "updated_at")

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user.get_username()
        super().save_model(request, obj, form, change)


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    # The pages' form: the secret and the Slack URL are written, never shown back.
    form = ChannelForm
    list_display = ("name", "kind", "url", "enabled")
    list_filter = ("kind", "enabled")
    search_fields = ("name", "url")

    def get_fields(self, request, obj=None):
        return ChannelForm.Meta.fields


@admin.register(Silence)
class SilenceAdmin(admin.ModelAdmin):
    list_display = ("id", "rule", "stream", "starts_at", "ends_at", "created_by", "comment")
    list_filter = ("rule", "stream")
    readonly_fields = ("created_by", "created_at")


class DeliveryAttemptInline(ReadOnly, admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = readonly_fields = ("at", "channel_name", "event", "attempt", "status", "http_status", "error")
    ordering = ("-at", "-id")


@admin.register(Alert)
class AlertAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("id", "state", "rule", "stream", "summary", "silenced", "fired_at", "resolved_at")
    list_filter = ("state", "kind", "silenced", "rule", "stream")
    list_select_related = ("rule", "stream")
    search_fields = ("summary", "rule__name", "stream__name")
    inlines = (DeliveryAttemptInline,)


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("at", "alert", "channel_name", "event", "attempt", "status", "http_status")
    list_filter = ("status", "event", "channel_name")
    list_select_related = ("alert",)
