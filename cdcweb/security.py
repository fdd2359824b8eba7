"""Refuse to serve the web with the development secret key unless DEBUG is on.

The key signs sessions, CSRF tokens and password-reset links: with the published
development key anyone can forge them. The check runs where a web server loads the
application (cdcweb/wsgi.py: gunicorn and runserver alike), so management commands,
workers and tests still run on a fresh machine, and the demo writes a random key of
its own to CDC_VAR_DIR (cdcweb/demo.py).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

REFUSAL = (
    "DJANGO_SECRET_KEY is not set (the development key is in use) and DJANGO_DEBUG is false: "
    "refusing to serve. Set DJANGO_SECRET_KEY (or DJANGO_SECRET_KEY_FILE) to a long random value, "
    'e.g. python -c "import secrets; print(secrets.token_urlsafe(50))".'
)


def refuse_development_key() -> None:
    """Raise ImproperlyConfigured naming DJANGO_SECRET_KEY if a server would run on the development key."""
    if not settings.DEBUG and settings.SECRET_KEY == settings.DEVELOPMENT_SECRET_KEY:
        raise ImproperlyConfigured(REFUSAL)
