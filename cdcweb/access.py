"""The pages' and the admin's half of the one rule of who may see what (streams/access.py).

A logged-in user without a role gets 403 from every page and admin page, whatever the
view checks itself: only logging in and out, /healthz and /metrics (which have rules of
their own) stay open. Anonymous visitors are left to the views (they send them to the
login page). The API's views (DRF) are left to their permission classes, which apply
the same rule after DRF has authenticated the request's token.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.views.defaults import permission_denied
from rest_framework.views import APIView

from streams.access import NO_ROLE, can_view

# URL names that a user without a role may still reach.
OPEN = frozenset({"login", "logout", "admin:logout", "healthz", "metrics"})


def is_api_view(view_func) -> bool:
    """Return True for a DRF view: it authenticates (tokens) and checks permissions itself."""
    cls = getattr(view_func, "cls", None) or getattr(view_func, "view_class", None)
    return isinstance(cls, type) and issubclass(cls, APIView)


class RoleRequiredMiddleware:
    """Answer 403 to a logged-in user in no role, before any page or admin view runs."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        """Refuse the view to a user who is logged in but neither a viewer nor an operator."""
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated or can_view(user):
            return None
        match = request.resolver_match
        if (match is not None and match.view_name in OPEN) or is_api_view(view_func):
            return None
        # The 403 page itself: raising would log a traceback for every refused click.
        return permission_denied(request, PermissionDenied(NO_ROLE))
