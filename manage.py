#!/usr/bin/env python
"""Django's command-line utility for cdcweb."""

import os
import sys


def main() -> None:
    """Run administrative tasks."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
    from django.core.management import execute_from_command_line

    from cdcweb import embedded_db

    embedded_db.start_if_default()  # DATABASE_URL unset: the embedded PostgreSQL in CDC_VAR_DIR

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
