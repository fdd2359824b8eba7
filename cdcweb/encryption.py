"""Secrets stored in the database (alert channels' signing keys and Slack URLs), encrypted at rest.

Fernet (AES-128-CBC with an HMAC-SHA256, from the cryptography package) under the keys in
CDC_SECRETS_KEY: comma-separated, the first encrypts, every one decrypts, so a key is
rotated by putting a new one first and running `manage.py cdc_secrets rotate`. Unset, the
key is derived from DJANGO_SECRET_KEY (HKDF-SHA256), which works for the demo and the
tests; set it in production, or a change of the secret key makes the saved secrets
unreadable. A value that cannot be decrypted (the key changed) is read as `Unreadable`:
empty, so it is never used to sign or send, and kept as it was stored until replaced.
"""

from __future__ import annotations

import base64
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import models

PREFIX = "fernet:"


class Stored(str):
    """A value as the database holds it (already encrypted): the field saves it unchanged."""


class Unreadable(str):
    """A stored secret the current keys cannot decrypt: reads as "" and saves back unchanged."""

    stored: str

    def __new__(cls, stored: str) -> Unreadable:
        value = super().__new__(cls, "")
        value.stored = stored
        return value


def derived_key(secret_key: str) -> bytes:
    """Return the Fernet key derived from Django's secret key (the default when CDC_SECRETS_KEY is unset)."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"cdcweb stored secrets")
    return base64.urlsafe_b64encode(hkdf.derive(secret_key.encode()))


@cache
def _fernet(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    chosen = [k.encode() for k in keys] or [derived_key(secret_key)]
    return MultiFernet([Fernet(k) for k in chosen])


def fernet() -> MultiFernet:
    """Return the keys in force (CDC_SECRETS_KEY, else derived from SECRET_KEY)."""
    return _fernet(tuple(settings.CDC_SECRETS_KEY), settings.SECRET_KEY)


def encrypt(text: str) -> str:
    """Return the stored form of a secret ("" stays "")."""
    return PREFIX + fernet().encrypt(text.encode()).decode() if text else ""


def decrypt(stored: str) -> str:
    """Return the secret a stored value holds, or Unreadable if the keys in force cannot open it."""
    if not stored.startswith(PREFIX):
        return stored  # written before encryption (the migration encrypts them all)
    try:
        return fernet().decrypt(stored.removeprefix(PREFIX).encode()).decode()
    except InvalidToken:
        return Unreadable(stored)


def rotate(stored: str) -> str:
    """Return the stored value encrypted again under the first key (as it was, if unreadable)."""
    if not stored.startswith(PREFIX):
        return encrypt(stored)
    try:
        return PREFIX + fernet().rotate(stored.removeprefix(PREFIX).encode()).decode()
    except InvalidToken:
        return stored


class EncryptedTextField(models.TextField):
    """Text kept encrypted in the database and plain in Python; it cannot be searched or ordered."""

    def from_db_value(self, value, expression, connection):
        """Decrypt what the database holds."""
        return value if value is None else decrypt(value)

    def get_prep_value(self, value):
        """Encrypt the value for the database; an unreadable one goes back as it came."""
        value = super().get_prep_value(value)
        if value is None:
            return None
        if isinstance(value, Unreadable):
            return value.stored
        if isinstance(value, Stored):
            return str(value)
        return encrypt(value)
