"""Wrong passwords are throttled on the sign-in page and /admin/login/ (issue 15, F16; django-axes).

After ``AXES_FAILURE_LIMIT`` wrong passwords for one user name, or from one client address, even the right password
is refused until ``AXES_COOLOFF_TIME`` has passed. Time is moved by patching the clocks axes and Django read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from unittest import mock

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.utils import timezone

pytestmark = pytest.mark.django_db

PASSWORD = "right-horse-battery"


@contextmanager
def clock_at(moment: datetime) -> Iterator[None]:
    """Every "now" that axes and Django's auto_now_add read, at ``moment``."""
    with (
        mock.patch("django.utils.timezone.now", return_value=moment),
        mock.patch("axes.handlers.proxy.now", return_value=moment),
        mock.patch("axes.attempts.now", return_value=moment),
    ):
        yield


def sign_in(path: str, username: str, password: str, address: str = "10.0.0.1") -> int:
    """The status of one sign-in: 302 signed in (redirected onward), 200 the form again, 429 locked out."""
    response = Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password})
    return int(response.status_code)


@pytest.fixture
def ana() -> User:
    return User.objects.create_superuser("ana", password=PASSWORD)


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_after_the_limit_of_wrong_passwords_even_the_right_one_is_refused_until_the_window_passes(
    ana: User, path: str
) -> None:
    """F16: admin login accepted unlimited wrong passwords."""
    start = timezone.now()
    limit = settings.AXES_FAILURE_LIMIT
    with clock_at(start):
        codes = [sign_in(path, "ana", "wrong") for _ in range(limit)]
        assert codes == [200] * (limit - 1) + [429]  # the form again with its error, then the lockout page
        assert sign_in(path, "ana", PASSWORD) == 429
    with clock_at(start + settings.AXES_COOLOFF_TIME - timedelta(seconds=1)):
        assert sign_in(path, "ana", PASSWORD) == 429
    with clock_at(start + settings.AXES_COOLOFF_TIME + timedelta(seconds=1)):
        assert sign_in(path, "ana", PASSWORD) == 302


def test_one_user_name_is_locked_whatever_address_the_guesses_come_from(ana: User) -> None:
    """F16: per user name."""
    with clock_at(timezone.now()):
        for n in range(settings.AXES_FAILURE_LIMIT):
            sign_in("/login/", "ana", "wrong", address=f"10.0.1.{n}")
        assert sign_in("/login/", "ana", PASSWORD, address="10.0.2.1") == 429


def test_one_address_is_locked_whatever_user_names_it_tries(ana: User) -> None:
    """F16: per client address; other addresses still sign in."""
    User.objects.create_user("bo", password=PASSWORD)
    with clock_at(timezone.now()):
        for n in range(settings.AXES_FAILURE_LIMIT):
            sign_in("/admin/login/", f"guess{n}", "wrong", address="10.0.3.3")
        assert sign_in("/login/", "bo", PASSWORD, address="10.0.3.3") == 429
        assert sign_in("/login/", "bo", PASSWORD, address="10.0.4.4") == 302


def test_a_few_typos_then_the_right_password_signs_in_and_start_the_count_afresh(ana: User) -> None:
    with clock_at(timezone.now()):
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            sign_in("/login/", "ana", "wrong")
        assert sign_in("/login/", "ana", PASSWORD) == 302
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            sign_in("/login/", "ana", "wrong")
        assert sign_in("/login/", "ana", PASSWORD) == 302


@override_settings(HINDSIGHT_LOGIN_CLIENT_IP_HEADER="X-Forwarded-For")
def test_behind_a_proxy_the_address_is_the_one_the_proxy_appended_not_one_the_client_wrote(ana: User) -> None:
    """F16: a client rotating a forged X-Forwarded-For prefix is still counted at its real address."""
    User.objects.create_user("bo", password=PASSWORD)
    with clock_at(timezone.now()):
        for n in range(settings.AXES_FAILURE_LIMIT):
            response = Client(REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR=f"1.2.3.{n}, 203.0.113.7").post(
                "/login/", {"username": f"guess{n}", "password": "wrong"}
            )
        assert response.status_code == 429
        other = Client(REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="203.0.113.8")
        assert other.post("/login/", {"username": "bo", "password": PASSWORD}).status_code == 302
