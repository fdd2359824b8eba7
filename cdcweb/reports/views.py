"""Report pages: the list (live progress), the new-report form for operators, a report's charts, CSV."""

from __future__ import annotations

from datetime import UTC, timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from streams.access import can_operate
from streams.forms import UtcDateTimeField
from streams.models import Stream

from . import services as report_services
from .models import Report
from .output import table_columns_rows, to_csv

LIST_ROWS = 100
# Tables drawn as charts; every other table is listed with its CSV link only.
CHARTED = ("throughput", "latency_by_minute", "transaction_shape", "cost")


class ReportForm(forms.Form):
    """A stream and a commit-time range in UTC, checked like the API checks it."""

    stream = forms.ModelChoiceField(queryset=Stream.objects.order_by("name"))
    since = UtcDateTimeField()
    until = UtcDateTimeField()
    kind = forms.ChoiceField(
        choices=Report.Kind.choices, initial=Report.Kind.ALL, required=False, label="Reports"
    )

    def clean(self) -> dict:
        """Add the range's field errors (reversed, too long, in the future)."""
        data = super().clean()
        for field, message in report_services.range_errors(data.get("since"), data.get("until")).items():
            self.add_error(field, message)
        return data


def _filtered(request) -> tuple[Stream | None, list[Report]]:
    """Return the stream named by ?stream= (if any) and the newest reports, of it or of all."""
    stream = None
    raw = request.GET.get("stream", "")
    if raw.isdigit():
        stream = Stream.objects.filter(pk=int(raw)).first()
    reports = Report.objects.select_related("stream").defer("results")
    if stream is not None:
        reports = reports.filter(stream=stream)
    return stream, list(reports[:LIST_ROWS])


def _rows_context(request) -> dict:
    stream, reports = _filtered(request)
    live = any(not r.finished for r in reports)
    return {"stream": stream, "reports": reports, "live": live, "query": request.GET.urlencode()}


@login_required
def report_list(request):
    """Show the newest reports (of one stream with ?stream=), with live progress."""
    context = {**_rows_context(request), "streams": Stream.objects.order_by("name")}
    return render(request, "reports/list.html", {**context, "can_operate": can_operate(request.user)})


@login_required
def report_rows(request):
    """Return the list's rows alone, for the live refresh."""
    return render(request, "reports/_rows.html", _rows_context(request))


def _yesterday() -> dict:
    until = timezone.now().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    fmt = "%Y-%m-%dT%H:%M"
    return {"since": (until - timedelta(days=1)).strftime(fmt), "until": until.strftime(fmt)}


@login_required
def report_new(request):
    """Show the new-report form (operators only) and create the report it describes."""
    if not can_operate(request.user):
        raise PermissionDenied("only operators may start reports")
    if request.method == "POST":
        form = ReportForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            report = report_services.create_report(
                data["stream"],
                data["since"],
                data["until"],
                by=request.user.get_username(),
                kind=data["kind"],
            )
            messages.success(request, f"Report {report.pk} queued: Spark starts it shortly.")
            return redirect("report-detail", pk=report.pk)
    else:
        form = ReportForm(initial={"stream": request.GET.get("stream"), **_yesterday()})
    return render(request, "reports/new.html", {"form": form, "can_operate": True})


@login_required
def report_detail(request, pk: int):
    """Show a report: progress while it runs; then totals, charts, assumptions and CSV links."""
    report = get_object_or_404(Report.objects.select_related("stream"), pk=pk)
    results = report.results or {}
    context = {
        "report": report,
        "can_operate": can_operate(request.user),
        "tables": [(name, len(rows)) for name, rows in results.items()],
        "charts": {name: results.get(name, []) for name in CHARTED},
        "totals": (report.summary or {}).get("totals", {}),
    }
    return render(request, "reports/detail.html", context)


@login_required
def report_status(request, pk: int):
    """Return the report's status panel alone; ask for a full reload once it has finished."""
    report = get_object_or_404(Report.objects.defer("results"), pk=pk)
    response = render(request, "reports/_status.html", {"report": report})
    if report.finished and request.GET.get("was") in (Report.Status.QUEUED, Report.Status.RUNNING):
        response["HX-Refresh"] = "true"  # the charts need the whole page
    return response


@login_required
def report_csv(request, pk: int, table: str):
    """Return one result table of the report as a CSV download."""
    report = get_object_or_404(Report, pk=pk)
    found = table_columns_rows(report, table)
    if found is None:
        raise Http404(f"this report has no table {table!r}")
    response = HttpResponse(to_csv(*found), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="report-{report.pk}-{table}.csv"'
    return response
