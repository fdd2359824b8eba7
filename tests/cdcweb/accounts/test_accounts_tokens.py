"""API tokens: issued with an expiry by cdc_token or the token endpoint, revoked one by one."""

from __future__ import annotations

import importlib
from datetime import timedelta
from io import StringIO
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

LEGACY = importlib.import_module("cdcweb.accounts.migrations.0001_hash_legacy_tokens")


def cdc_token(*args: str) -> str:
    out = StringIO()
    call_command("cdc_token", *args, stdout=out, stderr=StringIO())
    return out.getvalue().strip()


def reads(token: str) -> int:
    """Return the status of a read of the streams with this token."""
    return APIClient(HTTP_AUTHORIZATION=f"Token {token}").get("/api/v1/streams/").status_code


def test_cdc_token_prints_a_new_token_that_expires_after_the_configured_days(users, settings):
    # when an operator's token is printed
    token = cdc_token("otto")
    # then it reads the API, and expires CDC_TOKEN_DAYS (90) from now
    assert reads(token) == 200
    stored = AuthToken.objects.get(user=users["operator"])
    assert stored.expiry - timezone.now() == pytest.approx(timedelta(days=90), abs=timedelta(minutes=1))
    # and each run prints another one; --days 0 never expires
    assert cdc_token("otto", "--days", "0") != token
    assert AuthToken.objects.filter(user=users["operator"], expiry__isnull=True).count() == 1


def test_a_revoked_token_is_refused_and_the_others_still_work(users):
    # given two tokens of one user
    first, second = cdc_token("otto"), cdc_token("otto")
    # when the first is revoked by the prefix --list shows
    listed = cdc_token("otto", "--list").splitlines()
    assert [line.split()[0] for line in listed] == [first[:15], second[:15]]
    cdc_token("otto", "--revoke", first[:10])
    # then it gets 401 and the second still reads
    assert (reads(first), reads(second)) == (401, 200)
    cdc_token("otto", "--revoke-all")
    assert reads(second) == 401


def test_revoking_needs_a_prefix_that_names_one_token(users):
    cdc_token("otto")
    with pytest.raises(CommandError, match="at least the first 8"):
        cdc_token("otto", "--revoke", "abc")
    with pytest.raises(CommandError, match="no token starting"):
        cdc_token("otto", "--revoke", "zzzzzzzzzz")
    with pytest.raises(CommandError, match="no user named"):
        cdc_token("ghost")


def test_tokens_of_the_old_plain_text_table_keep_working_as_digests(users):
    # given a database from before: rest_framework.authtoken's table holding a token in plain text
    old = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, created timestamp, user_id int)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES (%s, %s, %s)", [old, timezone.now(), users["viewer"].pk]
        )
    # when the migration runs
    LEGACY.hash_legacy_tokens(apps, SimpleNamespace(connection=connection))
    # then the same token reads, it expires, and its text is no longer stored
    assert reads(old) == 200
    assert AuthToken.objects.get(user=users["viewer"]).expiry is not None
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0


def test_the_token_endpoint_trades_a_password_for_a_token_and_revokes_it(users):
    client = APIClient()
    answer = client.post("/api/v1/auth/token/", {"username": "vera", "password": "pw"}, format="json")
    assert answer.status_code == 200, answer.content
    token = answer.json()["token"]
    assert answer.json()["expiry"]
    assert reads(token) == 200
    revoked = APIClient(HTTP_AUTHORIZATION=f"Token {token}").post("/api/v1/auth/revoke/")
    assert revoked.status_code == 204
    assert reads(token) == 401


def test_a_wrong_password_gets_400_and_no_token(users):
    answer = APIClient().post("/api/v1/auth/token/", {"username": "vera", "password": "no"}, format="json")
    assert answer.status_code == 400
    assert "token" not in answer.json()
    assert not AuthToken.objects.exists()


def test_a_password_change_in_the_admin_revokes_the_users_tokens(users, client):
    # given a viewer with two tokens, and an operator with one
    vera, otto = users["viewer"], users["operator"]
    mine = [AuthToken.objects.create(user=vera)[1] for _ in range(2)]
    theirs = AuthToken.objects.create(user=otto)[1]
    assert [reads(t) for t in mine] == [200, 200]
    # when an administrator sets the viewer a new password
    client.force_login(users["superuser"])
    new = "a long and unusual passphrase"
    answer = client.post(f"/admin/auth/user/{vera.pk}/password/", {"password1": new, "password2": new,
                                                                   "usable_password": "true"})  # fmt: skip
    assert answer.status_code == 302, answer.content[:2000]
    # then the viewer's tokens no longer work, and nobody else's changed
    assert [reads(t) for t in mine] == [401, 401]
    assert reads(theirs) == 200


def test_set_password_and_save_revokes_them_too(users):
    vera = users["viewer"]
    token = AuthToken.objects.create(user=vera)[1]
    vera.first_name = "Vera"
    vera.save()  # another change keeps them
    assert reads(token) == 200
    vera.set_password("another long passphrase")
    vera.save()
    assert reads(token) == 401
    assert not AuthToken.objects.filter(user=vera).exists()
