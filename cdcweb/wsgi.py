"""WSGI entry point (gunicorn, and runserver through WSGI_APPLICATION)."""

import os

from django.core.wsgi import get_wsgi_application

from cdcweb import embedded_db

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
embedded_db.start_if_default()  # DATABASE_URL unset: the embedded PostgreSQL in CDC_VAR_DIR
application = get_wsgi_application()

from .security import refuse_development_key  # noqa: E402 - needs the settings configured above

refuse_development_key()

from .gc_freeze import freeze_start_up  # noqa: E402

freeze_start_up()
