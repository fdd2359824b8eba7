"""The accounts app: API tokens (django-rest-knox), their endpoints and the cdc_token command."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Who may call the API: hashed, expiring tokens issued to users, and their revocation."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "cdcweb.accounts"
    label = "accounts"

    def ready(self) -> None:
        """Drop kept credentials (cdcweb/auth.py) whenever a token, user, group or permission changes."""
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group, Permission
        from django.db.models.signals import m2m_changed, post_delete, post_save
        from knox.models import AuthToken

        from cdcweb.auth import forget_credentials

        user_model = get_user_model()
        memberships = (user_model.groups, user_model.user_permissions, Group.permissions)
        for model in (AuthToken, user_model, Group, Permission):
            uid = f"auth-cache-{model._meta.label}"
            post_save.connect(forget_credentials, sender=model, dispatch_uid=uid)
            post_delete.connect(forget_credentials, sender=model, dispatch_uid=uid)
        for relation in memberships:
            uid = f"auth-cache-{relation.through._meta.label}"
            m2m_changed.connect(forget_credentials, sender=relation.through, dispatch_uid=uid)
