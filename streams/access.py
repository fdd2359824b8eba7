"""Who may see and who may act: the one rule of the web pages, the API and the admin.

Viewers see; operators see and act. A logged-in user who is neither (in no group,
holding neither permission) sees nothing: every page, endpoint and admin page answers
403 (cdcweb/access.py for pages and the admin, streams.api.permissions for the API).
"""

from __future__ import annotations

VIEW_PERMISSION = "streams.view_stream"
OPERATE_PERMISSION = "streams.operate_stream"
NO_ROLE = "your account has no role here: ask an administrator for the viewers or operators group"


def can_view(user) -> bool:
    """Return True if the user may see streams, partitions, alerts and reports.

    Viewers are the active users who hold streams.view_stream: members of the "viewers"
    and "operators" groups (streams.roles gives both the permission), users granted it on
    their own, and superusers.
    """
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return user.has_perm(VIEW_PERMISSION)


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
