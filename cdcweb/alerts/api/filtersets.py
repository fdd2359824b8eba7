"""Filters of the alerts API (django-filter)."""

from __future__ import annotations

import django_filters
from django.db.models import Q
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from cdcweb.alerts.models import Alert, AlertRule, Channel, Silence
from streams.forms import ZonedDateTimeField


@extend_schema_field(OpenApiTypes.DATETIME)
class ZonedDateTimeFilter(django_filters.IsoDateTimeFilter):
    """A time filter that wants a zone and a year from 1970 to 2999, as every time the API takes."""

    field_class = ZonedDateTimeField


class AlertFilterSet(django_filters.FilterSet):
    """Filter alerts by state and kind (repeatable), rule, stream, silenced, and when they fired."""

    state = django_filters.MultipleChoiceFilter(choices=Alert.State.choices)
    kind = django_filters.MultipleChoiceFilter(choices=AlertRule.Kind.choices)
    fired_after = ZonedDateTimeFilter(field_name="fired_at", lookup_expr="gte")
    fired_before = ZonedDateTimeFilter(field_name="fired_at", lookup_expr="lt")

    class Meta:
        model = Alert
        fields = ("state", "kind", "rule", "stream", "silenced", "fired_after", "fired_before")


class AlertRuleFilterSet(django_filters.FilterSet):
    """Filter rules by kind (repeatable), stream, enabled and name."""

    kind = django_filters.MultipleChoiceFilter(choices=AlertRule.Kind.choices)
    name = django_filters.CharFilter(lookup_expr="icontains")
    every_stream = django_filters.BooleanFilter(field_name="stream", lookup_expr="isnull")

    class Meta:
        model = AlertRule
        fields = ("kind", "stream", "enabled", "name", "every_stream")


class ChannelFilterSet(django_filters.FilterSet):
    """Filter channels by kind and enabled."""

    kind = django_filters.MultipleChoiceFilter(choices=Channel.Kind.choices)

    class Meta:
        model = Channel
        fields = ("kind", "enabled")


class SilenceFilterSet(django_filters.FilterSet):
    """Filter silences by rule, stream, and whether they mute alerts now."""

    active = django_filters.BooleanFilter(method="filter_active")

    class Meta:
        model = Silence
        fields = ("rule", "stream", "active")

    def filter_active(self, queryset, name, value):
        """Keep the silences muting alerts now (true) or not (false)."""
        now = timezone.now()
        current = Q(starts_at__lte=now, ends_at__gt=now)
        return queryset.filter(current) if value else queryset.exclude(current)
