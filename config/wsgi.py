"""WSGI entry point for production servers: gunicorn ``config.wsgi:application`` (Procfile).

Without DJANGO_SETTINGS_MODULE it runs the production settings, so a WSGI server started bare refuses to serve
with the local key instead of serving with it (``manage.py runserver`` has set the local default before).
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
application = get_wsgi_application()
