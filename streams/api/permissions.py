"""Who may do what through the API: viewers read; operators also create, change, delete and act."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from streams.access import NO_ROLE, can_operate, can_view
from streams.access import OPERATE_PERMISSION as OPERATE
from streams.access import VIEW_PERMISSION as READ

WRITE = {
    "POST": "streams.add_stream",
    "PUT": "streams.change_stream",
    "PATCH": "streams.change_stream",
    "DELETE": "streams.delete_stream",
}


def required_permission(request, view) -> str:
    """Return the permission a request needs: actions need operate_stream, writes the model's."""
    if getattr(view, "action", None) in getattr(view, "operate_actions", ()):
        return OPERATE
    if request.method in SAFE_METHODS:
        return READ
    return WRITE.get(request.method, OPERATE)


class RolePermission(BasePermission):
    """Allow a request when the user's groups (viewers, operators) or superuser status grant it.

    Anonymous requests are refused before any check, so DRF answers 401 with
    WWW-Authenticate (the token authenticator comes first), never 403. A user in no
    role is refused everything (streams.access), saying so.
    """

    message = "your role does not allow this: operators may change and act on streams, viewers only read"

    def has_permission(self, request, view) -> bool:
        """Return True if the authenticated user holds the permission the request needs."""
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if not can_view(user):
            self.message = NO_ROLE
            return False
        needed = required_permission(request, view)
        # Acting is decided by the pages' own rule, so both always agree on who is an operator.
        return can_operate(user) if needed == OPERATE else user.has_perm(needed)


class HasRole(BasePermission):
    """Allow any user with a role (a viewer or an operator): for endpoints every role may use."""

    message = NO_ROLE

    def has_permission(self, request, view) -> bool:
        """Return True if the user is a viewer or an operator (streams.access.can_view)."""
        user = request.user
        return bool(user and user.is_authenticated and can_view(user))
