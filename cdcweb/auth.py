"""Django's model permissions, read in one query instead of two."""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission


class OneQueryModelBackend(ModelBackend):
    """ModelBackend whose get_all_permissions reads the user's own and group permissions together.

    Every API request checks one permission; ModelBackend answers it with a query
    for the user's permissions and another for their groups'. Here one UNION
    does both: the same set, one round trip less per request.
    """

    def get_all_permissions(self, user_obj, obj=None) -> set[str]:
        """Return "app_label.codename" of every permission the active user holds (all for superusers)."""
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if not hasattr(user_obj, "_perm_cache"):
            fields = ("content_type__app_label", "codename")
            if user_obj.is_superuser:
                rows = Permission.objects.values_list(*fields).order_by()
            else:
                own = Permission.objects.filter(user=user_obj).values_list(*fields).order_by()
                via_groups = Permission.objects.filter(group__user=user_obj).values_list(*fields).order_by()
                rows = own.union(via_groups)
            user_obj._perm_cache = {f"{app}.{codename}" for app, codename in rows}
        return user_obj._perm_cache
