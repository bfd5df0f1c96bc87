"""Login throttling (django-axes, issue 25): /login/, /admin/login/ and staff API tokens answer 429 after
AXES_FAILURE_LIMIT failures per username and per address, the right password too, until `manage.py axes_reset`;
the address is REMOTE_ADDR, never a header the client sends."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from evaluator.models import ApiToken

pytestmark = pytest.mark.django_db
LIMIT = 3
PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True)
def limit(settings) -> None:
    settings.AXES_FAILURE_LIMIT = LIMIT


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("reviewer", password=PASSWORD, is_staff=True)


def _login(path: str, username: str, password: str, address: str = "10.0.0.1", **headers: str) -> int:
    client = Client(REMOTE_ADDR=address)
    return client.post(path, {"username": username, "password": password, "next": "/"}, **headers).status_code


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_the_sign_in_pages_lock_out_per_user_and_per_address(staff, path: str) -> None:
    assert _login(path, "reviewer", PASSWORD) == 302  # works before
    for n in range(LIMIT):
        # a client-sent X-Forwarded-For does not make each guess come from a new address; the failure that
        # reaches the limit is answered with the lockout
        expected = 429 if n == LIMIT - 1 else 200
        assert _login(path, "reviewer", f"guess {n}", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}") == expected
    assert _login(path, "reviewer", PASSWORD) == 429  # the right password, same address and user
    assert _login(path, "reviewer", PASSWORD, address="10.9.9.9") == 429  # same user, another address
    get_user_model().objects.create_user("other", password=PASSWORD, is_staff=True)
    assert _login(path, "other", PASSWORD) == 429  # same address, another user
    assert _login(path, "other", PASSWORD, address="10.9.9.9") == 302  # neither
    page = Client(REMOTE_ADDR="10.0.0.1").post(path, {"username": "reviewer", "password": PASSWORD})
    assert page.status_code == 429 and b"Too many failed sign-ins" in page.content and b"axes_reset" in page.content
    call_command("axes_reset", verbosity=0)
    assert _login(path, "reviewer", PASSWORD) == 302


def test_failures_below_the_limit_do_not_lock(staff) -> None:
    for n in range(LIMIT - 1):
        assert _login("/login/", "reviewer", f"guess {n}") == 200
    assert _login("/login/", "reviewer", PASSWORD) == 302


def _api(key: str, address: str = "10.0.0.1") -> int:
    return Client(REMOTE_ADDR=address).get("/api/reruns", HTTP_AUTHORIZATION=f"Token {key}").status_code


def test_guessed_api_tokens_lock_out_the_address(staff) -> None:
    _, key = ApiToken.issue(staff)
    assert _api(key) == 200
    for n in range(LIMIT):
        assert _api(f"guess-{n}") == (429 if n == LIMIT - 1 else 403)  # the guess that reaches the limit: 429
    assert _api(key) == 429  # the right token from the address that guessed
    assert _api(f"guess-{LIMIT}") == 429
    assert _api(key, address="10.9.9.9") == 200  # a token names no user: other addresses are not locked
    call_command("axes_reset_ip", "10.0.0.1", verbosity=0)
    assert _api(key) == 200
