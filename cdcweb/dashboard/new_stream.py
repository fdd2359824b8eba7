"""The dashboard's "New stream" page: the kind first, then its settings, a Check, and a Create.

Check runs the kind's checks against the source (validation.py, the same as the API's
validate) and shows each result beside the setting it is about. Create runs them again
and is refused while one fails, unless the operator ticks "create anyway"; either way
the stream is created NOT_STARTED and the audit log says who created it and whether a
check was overridden.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse

from partitions.sources import KINDS
from partitions.sources.checks import CheckResult
from streams import audit
from streams.access import can_operate

from . import validation
from .forms import stream_form


@login_required
def new_stream(request):
    """Show the kinds to pick from, or one kind's form; check or create on POST."""
    if not can_operate(request.user):
        raise PermissionDenied("only operators may create streams")
    kind = KINDS.get(request.GET.get("kind", ""))
    if kind is None or kind.unavailable:
        return render(request, "streams/new.html", {"kinds": list(KINDS.values()), "kind": None})
    form_class = stream_form(kind.name)
    form = form_class(data=request.POST) if request.method == "POST" else form_class()
    results: list[CheckResult] = []
    if request.method == "POST" and form.is_valid():
        results = validation.validate(kind.name, form.settings, form.cleaned_data["start_at"])
        if "create" in request.POST:
            created = _create(request, form, results)
            if created is not None:
                return redirect(reverse("stream-detail", args=[created.pk]))
    return render(request, "streams/new.html", _context(kind, form, results))


def _create(request, form, results: list[CheckResult]):
    """Save the stream unless a check failed and the operator did not override; return it or None."""
    failed = [r for r in results if not r.ok]
    if failed and not request.POST.get("override"):
        messages.error(
            request,
            f"Create refused: {len(failed)} of {len(results)} checks failed. Fix them, or tick "
            "'Create anyway' to create the stream regardless.",
        )
        return None
    stream = form.save()
    detail = "created" + (
        f", overriding failed checks: {', '.join(r.check for r in failed)}" if failed else ""
    )
    audit.record(stream, "create", request.user.get_username(), detail)
    messages.success(request, f"Created stream {stream.name} (NOT_STARTED): start it when ready.")
    return stream


def _context(kind, form, results: list[CheckResult]) -> dict:
    """Return the page's context: the form, and the check results by the field they are about."""
    fields = {field.name for field in form}
    beside: dict[str, list[CheckResult]] = {}
    general: list[CheckResult] = []
    for result in results:
        if result.setting in fields:
            beside.setdefault(result.setting, []).append(result)
        else:
            general.append(result)
    rows = [(field, beside.get(field.name, [])) for field in form]
    return {
        "kind": kind,
        "form": form,
        "rows": rows,
        "general": general,
        "results": results,
        "failed": sum(not r.ok for r in results),
    }
