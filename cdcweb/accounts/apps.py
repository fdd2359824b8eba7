"""The accounts app: API tokens (django-rest-knox), their endpoints and the cdc_token command."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Who may call the API: hashed, expiring tokens issued to users, and their revocation."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "cdcweb.accounts"
    label = "accounts"
