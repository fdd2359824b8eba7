"""Who may act on streams from the web pages."""

from __future__ import annotations

OPERATORS_GROUP = "operators"
OPERATE_PERMISSION = "streams.operate_stream"


def can_operate(user) -> bool:
    """Return True if the user may start, pause, resume or recover streams.

    Operators are superusers, members of the "operators" group, or holders of the
    streams.operate_stream permission; everyone else who is logged in only reads.
    """
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser or user.has_perm(OPERATE_PERMISSION):
        return True
    return user.groups.filter(name=OPERATORS_GROUP).exists()
