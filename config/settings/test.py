"""Test settings: the shared base plus what the test run wants (pyproject.toml's DJANGO_SETTINGS_MODULE for pytest).

The Celery workers and poll loops the tests start run on it too (tests/faults/faultkit.py ``subprocess_env``), so a
user a test saves can sign in there; tests/test_settings.py starts its processes on the production settings.
"""

from __future__ import annotations

import os

from config.settings.base import *  # noqa: F403
from config.settings.base import DATABASES

if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
    # One test database per test process, so concurrent test runs on one server never drop each other's.
    DATABASES["default"]["TEST"] = {"NAME": os.environ.get("HINDSIGHT_TEST_DB_NAME", f"test_hindsight_{os.getpid()}")}

# Users made by tests only need a hash, not a slow one: the default PBKDF2 costs ~0.3 s per password.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
