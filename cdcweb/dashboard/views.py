"""Dashboard pages of streams: the overview, a stream's page, its live parts and its actions."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from cdcweb.alerts import history as alert_history
from partitions.models import Partition
from partitions.sources import KINDS
from partitions.views import partition_table_context
from streams import actions, kinds
from streams.access import can_operate
from streams.models import Stream
from streams.times import parse_form_time
from streams.transitions import TransitionNotAllowed, allowed_from

from . import summaries, watched

ACTIONS = ("start", "pause", "resume", "recover")
HISTORY_ROWS = 50
# Transitions drawn on the lag chart: enough for 30 days of a busy stream's moves.
ANNOTATION_ROWS = 300
DONE = {
    "start": "Start requested: the stream is {state} while the roots are found.",
    "pause": "Pause requested: the stream is {state} while readers close their windows.",
    "resume": "Resume requested: the stream is {state} and continues from its watermarks.",
    "recover": "Recovery requested: the stream is {state}.",
}
SENT = "{action} sent to Datastream: its progress shows below, and the state moves as Datastream reports."


@login_required
def overview(request):
    """Show every stream as one row: state, lag, sparkline, throughput, partitions, warnings."""
    context = {**_overview_context(), "can_operate": can_operate(request.user)}
    context["firing_alerts"] = alert_history.firing()  # shown above the streams, first
    return render(request, "streams/overview.html", context)


@login_required
def overview_rows(request):
    """Return the overview's rows alone, for the live refresh."""
    return render(request, "streams/_overview_rows.html", _overview_context())


def _overview_context() -> dict:
    return {"rows": summaries.overview(list(Stream.objects.all()))}


def _panel_context(request, stream: Stream) -> dict:
    """Return what the stream's live panel shows: summary, holder, warnings, allowed actions."""
    now = timezone.now()
    summary = summaries.overview([stream], now)[0]
    held_by = summary["progress"].holding_partition_id
    holder = Partition.objects.filter(pk=held_by).first() if held_by else None
    operate = can_operate(request.user)
    context = {"stream": stream, "s": summary, "holder": holder, "can_operate": operate}
    if kinds.watched(stream.source_kind):
        available = watched.available_actions(stream, summary["watched"])
        context.update(
            is_watched=True,
            watched=summary["watched"],
            operations=watched.operations_of(stream),
            objects=watched.objects_of(stream) if operate else [],
            holder=None,
        )
    else:
        available = {a: stream.state in allowed_from(a) for a in ACTIONS}
    return {**context, "available": available if operate else {}}


def _history_context(stream: Stream) -> dict:
    errors = list(stream.errors.all()[:HISTORY_ROWS])
    tokens = {e.partition_token for e in errors if e.partition_token}
    ids = dict(Partition.objects.filter(stream=stream, token__in=tokens).values_list("token", "pk"))
    for error in errors:
        error.partition_pk = ids.get(error.partition_token)
    return {
        "stream": stream,
        "transitions": list(stream.transitions.order_by("-at", "-id")[:HISTORY_ROWS]),
        "errors": errors,
        "audit_entries": list(stream.audit_entries.order_by("-at", "-id")[:HISTORY_ROWS]),
    }


def _annotations(stream: Stream) -> list[dict]:
    """Return the stream's latest state changes for the lag chart, oldest first."""
    rows = stream.transitions.order_by("-at", "-id").values("at", "from_state", "to_state", "by")
    return [{**row, "at": row["at"].isoformat()} for row in reversed(rows[:ANNOTATION_ROWS])]


def _source_context(stream: Stream) -> dict:
    """Return what the page says of the stream's source: its kind, settings, notes and advice."""
    kind = KINDS[stream.source_kind]
    try:
        advice = kind.advice(stream.connection)
    except (KeyError, ValueError):
        advice = None  # settings stored before a check existed: show the page without advice
    return {
        "kind": kind,
        "source_line": kind.describe(stream.connection),
        "source_notes": kind.notes(stream.connection),
        "advice": advice,
    }


@login_required
def stream_detail(request, pk: int):
    """Show a stream: state and actions, lag and throughput, lineage, tree, partitions, history."""
    stream = get_object_or_404(Stream, pk=pk)
    context = {
        **_panel_context(request, stream),
        **_history_context(stream),
        **partition_table_context(request, stream),
        **_source_context(stream),
        "annotations": _annotations(stream),
        "lineage_url": f"/api/v1/streams/{stream.pk}/lineage/",
        "lag_url": f"/api/v1/streams/{stream.pk}/lag/",
    }
    return render(request, "streams/detail.html", context)


@login_required
def stream_panel(request, pk: int):
    """Return the stream's live panel alone (state, lag, holder, warnings, actions)."""
    stream = get_object_or_404(Stream, pk=pk)
    return render(request, "streams/_panel.html", _panel_context(request, stream))


@login_required
def stream_history(request, pk: int):
    """Return the stream's transitions and errors alone, for the live refresh."""
    stream = get_object_or_404(Stream, pk=pk)
    return render(request, "streams/_history.html", _history_context(stream))


@login_required
@require_POST
def stream_action(request, pk: int, action: str):
    """Run one operator action, then show its outcome (or the refusal) on the stream's page."""
    if action not in ACTIONS:
        raise Http404("no such action")
    if not can_operate(request.user):
        raise PermissionDenied("only operators may act on streams")
    stream = get_object_or_404(Stream, pk=pk)
    try:
        stream = _run(action, stream, request)
    except (TransitionNotAllowed, actions.InvalidAction) as refused:
        messages.error(request, str(refused))
    else:
        done = SENT.format(action=action.capitalize()) if kinds.watched(stream.source_kind) else DONE[action]
        messages.success(request, done.format(state=stream.state))
    return redirect(reverse("stream-detail", args=[pk]))


@login_required
@require_POST
def stream_backfill(request, pk: int):
    """Start or stop the backfill of one object of a watched stream, then show the page."""
    if not can_operate(request.user):
        raise PermissionDenied("only operators may act on streams")
    stream = get_object_or_404(Stream, pk=pk)
    what, object_id = request.POST.get("what", ""), request.POST.get("object", "").strip()
    try:
        actions.backfill(stream, object_id, what, by=request.user.get_username())
    except (TransitionNotAllowed, actions.InvalidAction) as refused:
        messages.error(request, str(refused))
    else:
        messages.success(
            request, f"Backfill {what} of {object_id} sent to Datastream: its progress shows below."
        )
    return redirect(reverse("stream-detail", args=[pk]))


def _run(action: str, stream: Stream, request) -> Stream:
    """Call the action named by the form; raise InvalidAction for a bad recovery timestamp."""
    by = request.user.get_username()
    if action != "recover":
        return getattr(actions, action)(stream, by=by)
    strategy = request.POST.get("strategy", "")
    raw = request.POST.get("timestamp", "").strip()
    timestamp = None
    if strategy == "timestamp" and raw:
        try:
            timestamp = parse_form_time(raw)  # the form asks for UTC
        except ValueError as unreadable:
            raise actions.InvalidAction(str(unreadable)) from None
    # A watched stream's dialog: the position field counts only with its own strategy.
    position = request.POST.get("position", "").strip() if strategy == "position" else ""
    return actions.recover(stream, strategy, timestamp, by=by, position=position or None)
