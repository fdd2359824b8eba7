"""Issue, list and revoke API tokens (django-rest-knox): only their SHA-512 digests are stored."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from knox.models import AuthToken
from knox.settings import CONSTANTS


def default_lifetime() -> timedelta | None:
    """Return how long a new token lives (CDC_TOKEN_DAYS; None: it never expires)."""
    return settings.REST_KNOX["TOKEN_TTL"]


def issue(user, lifetime: timedelta | None) -> tuple[AuthToken, str]:
    """Create a token for the user; return it and its text, which is shown this once and never stored."""
    return AuthToken.objects.create(user=user, expiry=lifetime)


def of_user(user) -> list[AuthToken]:
    """Return the user's tokens, oldest first."""
    return list(AuthToken.objects.filter(user=user).order_by("created"))


def revoke(user, prefix: str) -> int:
    """Delete the user's token whose text starts with prefix (at least 8 characters); return 1 or 0."""
    if len(prefix) < 8:
        raise ValueError("give at least the first 8 characters of the token, as --list shows them")
    key = prefix[: CONSTANTS.TOKEN_KEY_LENGTH]  # a whole token works too: its first characters are kept
    matches = [token for token in of_user(user) if token.token_key.startswith(key)]
    if len(matches) > 1:
        raise ValueError(f"{prefix!r} names {len(matches)} tokens: give more characters")
    for token in matches:
        token.delete()
    return len(matches)


def revoke_all(user) -> int:
    """Delete every token of the user; return how many."""
    return AuthToken.objects.filter(user=user).delete()[0]


def purge_expired() -> int:
    """Delete every expired token of every user; return how many."""
    return AuthToken.objects.filter(expiry__lte=timezone.now()).delete()[0]


class RevokeTokensOnPasswordChange:
    """Revoke every API token of a user whose password changes (a stolen token dies with the old password).

    Listed with the password validators (settings.AUTH_PASSWORD_VALIDATORS): Django calls
    each validator's password_changed() once a new password is saved, wherever it was set
    (the admin, `manage.py changepassword`, set_password() and save()). It refuses nothing.
    """

    def validate(self, password: str, user=None) -> None:
        """Accept every password: the other validators judge them."""

    def password_changed(self, password: str, user=None) -> None:
        """Delete the user's tokens; sessions are already ended by Django (the password hash changed)."""
        if user is not None and user.pk is not None:
            revoke_all(user)

    def get_help_text(self) -> str:
        """Say what changing a password does to API tokens."""
        return "Changing your password revokes your API tokens."
