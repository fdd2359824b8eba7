"""Who may operate streams: the one rule of the web pages, the API and the admin's actions."""

from __future__ import annotations

OPERATE_PERMISSION = "streams.operate_stream"


def can_operate(user) -> bool:
    """Return True if the user may start, pause, resume or recover streams.

    Operators are the active users who hold streams.operate_stream: members of the
    "operators" group (streams.roles gives it the permission), users granted it on
    their own, and superusers. Logged-in viewers only read. The pages, the API
    (streams.api.permissions) and the admin (cdcweb/dashboard/admin.py) all ask here.
    """
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return user.has_perm(OPERATE_PERMISSION)
