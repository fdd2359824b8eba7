"""The cdcweb Django project: settings, URLs, the Celery app."""
