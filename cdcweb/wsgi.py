"""WSGI entry point (gunicorn, and runserver through WSGI_APPLICATION)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
application = get_wsgi_application()

from .security import refuse_development_key  # noqa: E402 - needs the settings configured above

refuse_development_key()
