"""Alert pages: alerts (firing, silenced, resolved) with their evidence, and rules, channels, silences.

Everyone logged in reads every page; only operators (streams.access.can_operate) see the
forms and may post them, as for stream actions and reports.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from streams.access import can_operate

from . import history
from .forms import ChannelForm, RuleForm, SilenceForm
from .models import Alert, AlertRule, Channel, DeliveryAttempt, Silence
from .rules import describe

ATTEMPT_ROWS = 200
SILENCE_ROWS = 200
# (form, model, what it is called, its list's route) of each editable thing, by the name in its routes.
EDITABLE = {
    "rule": (RuleForm, AlertRule, "alert rule", "alert-rules"),
    "channel": (ChannelForm, Channel, "channel", "alert-channels"),
    "silence": (SilenceForm, Silence, "silence", "alert-silences"),
}


def _operator(request) -> None:
    if not can_operate(request.user):
        raise PermissionDenied("only operators may change alert rules, channels and silences")


@login_required
def alert_list(request):
    """Show alerts firing now, silenced, and recently resolved, each with its evidence."""
    context = {**history.sections(), "can_operate": can_operate(request.user)}
    return render(request, "alerts/list.html", context)


@login_required
def alert_rows(request):
    """Return the alerts page's sections alone, for the live refresh."""
    return render(request, "alerts/_sections.html", history.sections())


@login_required
def firing_panel(request):
    """Return the overview's firing-alerts panel alone, for the live refresh."""
    return render(request, "alerts/_firing.html", {"firing_alerts": history.firing()})


@login_required
def alert_detail(request, pk: int):
    """Show one alert: its evidence, the lag chart link, and every delivery attempt."""
    attempts = Prefetch("deliveries", queryset=DeliveryAttempt.objects.order_by("-at", "-id"))
    alert = get_object_or_404(
        Alert.objects.select_related("rule", "stream").prefetch_related(attempts), pk=pk
    )
    context = {
        "alert": alert,
        "attempts": list(alert.deliveries.all())[:ATTEMPT_ROWS],
        "condition": describe(alert.rule),
        "can_operate": can_operate(request.user),
    }
    return render(request, "alerts/detail.html", context)


@login_required
def rule_list(request):
    """Show every rule with its condition, scope and channels."""
    rules = list(AlertRule.objects.select_related("stream").prefetch_related("channels").order_by("name"))
    for rule in rules:
        rule.condition = describe(rule)
    return render(request, "alerts/rules.html", {"rules": rules, "can_operate": can_operate(request.user)})


@login_required
def channel_list(request):
    """Show every channel (never its secrets)."""
    channels = Channel.objects.prefetch_related("rules").order_by("name")
    return render(
        request, "alerts/channels.html", {"channels": channels, "can_operate": can_operate(request.user)}
    )


@login_required
def silence_list(request):
    """Show silences, the active ones first."""
    silences = list(
        Silence.objects.select_related("rule", "stream").order_by("-ends_at", "-id")[:SILENCE_ROWS]
    )
    context = {"silences": silences, "now": timezone.now(), "can_operate": can_operate(request.user)}
    return render(request, "alerts/silences.html", context)


@login_required
def edit(request, what: str, pk: int | None = None):
    """Show and save the form of a new or existing rule, channel or silence (operators only)."""
    _operator(request)
    form_class, model, title, back = EDITABLE[what]
    instance = get_object_or_404(model, pk=pk) if pk else None
    initial = {k: v for k, v in request.GET.items() if k in ("rule", "stream", "kind")} if not pk else None
    form = form_class(request.POST or None, instance=instance, initial=initial)
    if request.method == "POST" and form.is_valid():
        saved = form.save(commit=False)
        if not saved.pk:
            saved.created_by = request.user.get_username()
        saved.save()
        form.save_m2m()
        messages.success(request, f"Saved the {title} {saved}.")
        return redirect(back)
    context = {"form": form, "title": title, "back": back, "instance": instance, "can_operate": True}
    return render(request, "alerts/form.html", context)


@login_required
@require_POST
def delete(request, what: str, pk: int):
    """Delete a rule (with its alerts), a channel or a silence (operators only)."""
    _operator(request)
    _, model, title, back = EDITABLE[what]
    instance = get_object_or_404(model, pk=pk)
    instance.delete()
    messages.success(request, f"Deleted the {title} {instance}.")
    return redirect(back)


@login_required
@require_POST
def silence_expire(request, pk: int):
    """End a silence now: its alerts are sent again from the next evaluation."""
    _operator(request)
    now = timezone.now()
    expired = Silence.objects.filter(pk=pk, ends_at__gt=now, starts_at__lt=now).update(ends_at=now)
    messages.success(request, "Silence ended." if expired else "That silence was not active.")
    return redirect("alert-silences")
