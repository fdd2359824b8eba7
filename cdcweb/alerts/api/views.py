"""Alerts API: alerts (read), and rules, channels and silences (viewers read, operators write).

Writes need the operator's permission (streams.operate_stream) through the API's one
RolePermission: every write action is listed in operate_actions, as stream actions are.
"""

from __future__ import annotations

from django.db.models import Prefetch
from rest_framework import viewsets

from cdcweb.alerts.models import Alert, AlertRule, Channel, DeliveryAttempt, Silence

from .filtersets import AlertFilterSet, AlertRuleFilterSet, ChannelFilterSet, SilenceFilterSet
from .serializers import (
    AlertDetailSerializer,
    AlertRuleSerializer,
    AlertSerializer,
    ChannelSerializer,
    SilenceSerializer,
)

WRITES = ("create", "update", "partial_update", "destroy")


class AuditedViewSet(viewsets.ModelViewSet):
    """A writable resource of the alerts API: operators write, and the creator is recorded."""

    lookup_value_regex = r"\d+"
    operate_actions = WRITES

    def perform_create(self, serializer):
        """Save the new row with the name of who created it."""
        serializer.save(created_by=self.request.user.get_username())


class AlertRuleViewSet(AuditedViewSet):
    """Alert rules: what to watch, on which stream (or every stream), and where to send it."""

    queryset = AlertRule.objects.select_related("stream").prefetch_related("channels").order_by("name")
    serializer_class = AlertRuleSerializer
    filterset_class = AlertRuleFilterSet


class ChannelViewSet(AuditedViewSet):
    """Channels: webhooks (signed JSON), Slack-compatible webhooks and email; secrets are write-only."""

    queryset = Channel.objects.order_by("name")
    serializer_class = ChannelSerializer
    filterset_class = ChannelFilterSet


class SilenceViewSet(AuditedViewSet):
    """Silences: alerts of a rule, a stream, or both are recorded but not sent until ends_at."""

    queryset = Silence.objects.select_related("rule", "stream").order_by("-ends_at", "-id")
    serializer_class = SilenceSerializer
    filterset_class = SilenceFilterSet


class AlertViewSet(viewsets.ReadOnlyModelViewSet):
    """Alerts, firing first then newest: what fired, on which evidence, and every delivery attempt."""

    queryset = Alert.objects.select_related("rule", "stream").order_by("state", "-fired_at", "-id")
    serializer_class = AlertSerializer
    filterset_class = AlertFilterSet
    lookup_value_regex = r"\d+"

    def get_serializer_class(self):
        """Return the detail serializer (with delivery attempts) for one alert."""
        return AlertDetailSerializer if self.action == "retrieve" else AlertSerializer

    def get_queryset(self):
        """Attach an alert's attempts, newest first, when one alert is read."""
        queryset = super().get_queryset()
        if self.action != "retrieve":
            return queryset
        attempts = DeliveryAttempt.objects.order_by("-at", "-id")
        return queryset.prefetch_related(Prefetch("deliveries", queryset=attempts))
