"""Lockouts and throttles count the client's real address: behind a proxy, the one it appended.

The proxy (10.0.0.1) appends the address it sees to X-Forwarded-For; whatever the client
wrote there before comes first and must not count.
"""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

PROXY = "10.0.0.1"
ATTACKER, VICTIM = "203.0.113.7", "198.51.100.9"


@pytest.fixture
def behind_proxy(settings):
    settings.CDC_BEHIND_TLS_PROXY = True
    settings.SECURE_PROXY_SSL_HEADER = None  # the test client speaks plain HTTP


def _via_proxy(client: Client, client_address: str, forged: str | None, username: str, password: str):
    """Log in through the proxy: a client may forge a first X-Forwarded-For entry; the proxy adds its own."""
    forwarded = f"{forged}, {client_address}" if forged else client_address
    return client.post(
        "/login/", {"username": username, "password": password},
        REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded,
    )  # fmt: skip


def test_forged_forwarded_for_entries_neither_escape_a_lockout_nor_lock_out_another_address(
    users, behind_proxy
):
    client = Client()
    # given five wrong passwords for vera from one address, each forging another first entry
    answers = [_via_proxy(client, ATTACKER, f"192.0.2.{n}", "vera", "guess").status_code for n in range(5)]
    # then that address is locked for vera, whatever it forges next
    assert answers == [200, 200, 200, 200, 429]
    assert _via_proxy(Client(), ATTACKER, VICTIM, "vera", "pw").status_code == 429
    # and another client behind the same proxy, forging the locked address, still logs in
    assert _via_proxy(Client(), VICTIM, ATTACKER, "vera", "pw").status_code == 302


def test_an_address_guessing_many_user_names_is_locked_out_for_every_name(users, behind_proxy, settings):
    settings.CDC_LOGIN_ADDRESS_FAILURE_LIMIT = 8
    client = Client()
    # given one wrong password for each of eight names from one address (no name reaches five)
    answers = [_via_proxy(client, ATTACKER, None, f"user-{n}", "guess").status_code for n in range(8)]
    assert answers == [200] * 7 + [429]
    # then even the right password of a real account is refused from that address
    assert _via_proxy(Client(), ATTACKER, None, "vera", "pw").status_code == 429
    # and the same account logs in from elsewhere
    assert _via_proxy(Client(), VICTIM, None, "vera", "pw").status_code == 302


def test_a_good_login_does_not_wipe_an_address_s_failures_at_other_names(users, behind_proxy, settings):
    settings.CDC_LOGIN_ADDRESS_FAILURE_LIMIT = 8
    # given an attacker with one real account who logs in between guesses at other names
    for n in range(8):
        if n % 3 == 2:
            assert _via_proxy(Client(), ATTACKER, None, "vera", "pw").status_code == 302
        _via_proxy(Client(), ATTACKER, None, f"user-{n}", "guess")
    # then the address is locked all the same
    assert _via_proxy(Client(), ATTACKER, None, "otto", "pw").status_code == 429


def test_without_a_proxy_the_forwarded_for_header_is_ignored(users):
    client = Client()
    # given a client that claims, in a header, to be another address
    for n in range(5):
        _via_proxy(client, VICTIM, None, "vera", f"guess-{n}")
    # then it locked itself (the peer), not the address it named
    assert (
        client.post("/login/", {"username": "vera", "password": "pw"}, REMOTE_ADDR=PROXY).status_code == 429
    )
    elsewhere = Client().post("/login/", {"username": "vera", "password": "pw"}, REMOTE_ADDR="192.0.2.50")
    assert elsewhere.status_code == 302


def test_the_token_endpoint_throttles_the_real_address_whatever_it_forges(users, behind_proxy):
    client = APIClient()
    answers = [
        client.post(
            "/api/v1/auth/token/", {"username": f"user-{n}", "password": "guess"}, format="json",
            REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, {ATTACKER}",
        ).status_code
        for n in range(11)
    ]  # fmt: skip
    assert answers[-1] == 429
    other = client.post(
        "/api/v1/auth/token/", {"username": "vera", "password": "pw"}, format="json",
        REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=f"{ATTACKER}, {VICTIM}",
    )  # fmt: skip
    assert other.status_code == 200
