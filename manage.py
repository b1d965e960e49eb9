#!/usr/bin/env python
"""Django's command-line entry point: `python manage.py analyze PATH`, `runserver`, `migrate`..."""

import os
import sys


def main() -> None:
    # The local default (config/settings/__init__.py); a deployment sets config.settings.production.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
