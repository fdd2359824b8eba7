"""Guessing passwords is slowed and stopped: throttled token endpoint, locked-out logins, validators."""

from __future__ import annotations

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import Client
from rest_framework.test import APIClient


def _login(client: Client, path: str, password: str):
    return client.post(path, {"username": "vera", "password": password})


def test_the_token_endpoint_answers_429_past_ten_tries_a_minute_from_one_address(users):
    # given eleven guesses from one address, each at another user name (so no lockout applies)
    client = APIClient()
    answers = [
        client.post("/api/v1/auth/token/", {"username": f"user-{n}", "password": "guess"}, format="json")
        for n in range(11)
    ]
    # then the eleventh is throttled
    assert [a.status_code for a in answers] == [400] * 10 + [429]
    assert "Retry-After" in answers[-1]


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_five_wrong_passwords_lock_the_login_even_for_the_right_one(users, path):
    users["viewer"].is_staff = True
    users["viewer"].save()
    client = Client()
    # given wrong passwords for one user from one address: the form again, until the fifth
    answers = [_login(client, path, f"guess-{n}").status_code for n in range(5)]
    assert answers == [200, 200, 200, 200, 429]
    # when the right password comes next, then the account is still locked for that address
    locked = _login(client, path, "pw")
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content
    assert "_auth_user_id" not in client.session


def test_the_token_endpoint_is_locked_out_like_the_login_form(users, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"auth": "100/minute"}}
    client = APIClient()
    for n in range(5):
        client.post("/api/v1/auth/token/", {"username": "vera", "password": f"guess-{n}"}, format="json")
    locked = client.post("/api/v1/auth/token/", {"username": "vera", "password": "pw"}, format="json")
    assert locked.status_code in (403, 429)
    assert "token" not in locked.content.decode()


def test_a_successful_login_is_not_locked(users):
    client = Client()
    assert _login(client, "/login/", "wrong").status_code == 200
    assert _login(client, "/login/", "pw").status_code == 302


@pytest.mark.parametrize("password", ["12345678", "password", "vera", "short1"])
def test_weak_passwords_are_refused(users, password):
    with pytest.raises(ValidationError):
        validate_password(password, users["viewer"])
    validate_password("a long and unusual passphrase", users["viewer"])
