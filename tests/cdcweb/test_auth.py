"""cdcweb.auth: hashed knox tokens and permissions as knox and Django give them, each in one query."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from knox.models import AuthToken
from rest_framework import exceptions
from rest_framework.test import APIClient

from cdcweb.auth import OneQueryModelBackend, TokenAuthentication, _remember, _remembered
from streams.roles import VIEWERS, ensure_roles
from tests.factories import wait_for
from tests.factories.lineage import make_lineage_stream
from tests.factories.ops import _fresh_health, django_db_setup  # noqa: F401 - the operations tests' fixtures


@pytest.fixture
def user(db) -> User:
    """Return a viewer who also holds one permission of their own."""
    ensure_roles(apps)
    user = User.objects.create_user("vera")
    user.groups.add(Group.objects.get(name=VIEWERS))
    user.user_permissions.add(Permission.objects.get(codename="add_stream"))
    return user


def _fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)


def test_own_and_group_permissions_come_in_one_query(user):
    with CaptureQueriesContext(connection) as queries:
        perms = OneQueryModelBackend().get_all_permissions(user)
    assert len(queries) == 1
    assert perms == ModelBackend().get_all_permissions(_fresh(user))
    assert {"streams.view_stream", "streams.add_stream"} <= perms
    assert "streams.operate_stream" not in perms


def test_superusers_hold_every_permission_and_inactive_users_none(user):
    root = User.objects.create_user("root", is_superuser=True)
    everything = ModelBackend().get_all_permissions(_fresh(root))
    assert OneQueryModelBackend().get_all_permissions(root) == everything
    user.is_active = False
    assert OneQueryModelBackend().get_all_permissions(user) == set()
    assert not user.has_perm("streams.view_stream")


def test_tokens_are_stored_only_as_digests(user):
    # given a token issued to the user
    stored, text = AuthToken.objects.create(user=user)
    # then its text is nowhere in the database, and its digest is a SHA-512
    assert text not in {stored.digest, stored.token_key}
    assert len(stored.digest) == 128
    assert not AuthToken.objects.filter(digest=text).exists()


def test_a_token_gives_its_user_and_the_stored_token_in_one_query(user):
    stored, text = AuthToken.objects.create(user=user)
    with CaptureQueriesContext(connection) as queries:
        found_user, found_token = TokenAuthentication().authenticate_credentials(text.encode())
    assert len(queries) == 1
    expected_user, expected_token = KnoxTokenAuthentication().authenticate_credentials(text.encode())
    assert (found_user.pk, found_user.username, found_user.is_active) == (user.pk, "vera", True)
    assert found_user.date_joined == expected_user.date_joined
    for field in ("digest", "token_key", "user_id", "created", "expiry"):
        assert getattr(found_token, field) == getattr(expected_token, field), field


def test_an_api_read_costs_two_queries_to_authenticate_and_authorize(
    user, django_assert_num_queries, settings
):
    # given a viewer's token, an answer the API cache already holds and no kept credentials
    settings.CDC_API_AUTH_CACHE_SECONDS = 0
    stream = make_lineage_stream("orders", 3)
    client = APIClient(HTTP_AUTHORIZATION=f"Token {AuthToken.objects.create(user=user)[1]}")
    url = f"/api/v1/streams/{stream.pk}/"
    assert client.get(url).status_code == 200
    # when the viewer reads it again, then only the token and the permissions are read
    # (knox's own authentication reads the user's other tokens too: three queries)
    with django_assert_num_queries(2):
        assert client.get(url).status_code == 200


def _viewer_client(user) -> APIClient:
    return APIClient(HTTP_AUTHORIZATION=f"Token {AuthToken.objects.create(user=user)[1]}")


def test_a_repeated_api_read_within_the_cache_seconds_reads_nothing(user, django_assert_num_queries):
    # given a viewer's token, read once: its user and permissions are kept, as is the answer
    stream = make_lineage_stream("orders", 3)
    client = _viewer_client(user)
    url = f"/api/v1/streams/{stream.pk}/"
    assert client.get(url).status_code == 200
    # when the viewer reads it again at once, then the database is not asked at all
    with django_assert_num_queries(0):
        answer = client.get(url)
    assert answer.status_code == 200
    assert answer.json()["name"] == "orders"


def test_kept_credentials_give_the_same_user_and_token_as_the_database(user):
    stored, text = AuthToken.objects.create(user=user, expiry=timedelta(days=3))
    first_user, first_token = TokenAuthentication().authenticate_credentials(text.encode())
    with CaptureQueriesContext(connection) as queries:
        kept_user, kept_token = TokenAuthentication().authenticate_credentials(text.encode())
    assert len(queries) == 0
    for field in User._meta.concrete_fields:
        assert getattr(kept_user, field.attname) == getattr(first_user, field.attname), field.name
    for field in ("digest", "token_key", "user_id", "created", "expiry"):
        assert getattr(kept_token, field) == getattr(stored, field), field
    assert kept_user.has_perm("streams.view_stream")
    assert not kept_user.has_perm("streams.operate_stream")


def test_a_revoked_token_is_refused_on_the_next_request(user):
    # given a token whose credentials are kept
    stored, text = AuthToken.objects.create(user=user)
    client = APIClient(HTTP_AUTHORIZATION=f"Token {text}")
    assert client.get("/api/v1/streams/").status_code == 200
    # when it is revoked through the API (knox's logout), then the next request is refused
    assert client.post("/api/v1/auth/revoke/").status_code == 204
    assert client.get("/api/v1/streams/").status_code == 401
    # and so is one revoked through the CLI's path
    other = _viewer_client(user)
    assert other.get("/api/v1/streams/").status_code == 200
    AuthToken.objects.filter(user=user).delete()
    assert other.get("/api/v1/streams/").status_code == 401


def test_role_and_account_changes_apply_on_the_next_request(user):
    client = _viewer_client(user)
    assert client.get("/api/v1/streams/").status_code == 200
    # a viewer taken out of the viewers group (and without the permission of their own) sees nothing
    user.groups.clear()
    assert client.get("/api/v1/streams/").status_code == 403
    # given the permission again, on their own
    user.user_permissions.add(Permission.objects.get(codename="view_stream"))
    assert client.get("/api/v1/streams/").status_code == 200
    # the permission taken from everyone who holds it through a group: operators' role changes too
    user.groups.add(Group.objects.get(name=VIEWERS))
    user.user_permissions.remove(Permission.objects.get(codename="view_stream"))
    assert client.get("/api/v1/streams/").status_code == 200
    Group.objects.get(name=VIEWERS).permissions.remove(Permission.objects.get(codename="view_stream"))
    assert client.get("/api/v1/streams/").status_code == 403
    # a deactivated account is refused
    user.user_permissions.add(Permission.objects.get(codename="view_stream"))
    assert client.get("/api/v1/streams/").status_code == 200
    user.is_active = False
    user.save()
    assert client.get("/api/v1/streams/").status_code == 401


def test_a_change_that_bypasses_signals_is_seen_within_the_cache_seconds(user, settings):
    settings.CDC_API_AUTH_CACHE_SECONDS = 0.3
    client = _viewer_client(user)
    assert client.get("/api/v1/streams/").status_code == 200
    User.objects.filter(pk=user.pk).update(is_active=False)  # no signal: nothing is told
    started = time.monotonic()
    wait_for(
        "the deactivated user's token to be refused",
        lambda: client.get("/api/v1/streams/").status_code == 401,
        timeout=10,
    )
    assert time.monotonic() - started < 5


def test_credentials_read_before_a_change_are_not_kept_as_current(user):
    # given a request that read the generation, then its rows, while a role changed
    kept, generation = _remembered("auth:permissions:test")
    assert kept is None
    user.groups.clear()
    _remember("auth:permissions:test", generation, frozenset({"streams.view_stream"}))
    # then what it read is not taken for the new generation's
    assert _remembered("auth:permissions:test")[0] is None


def test_unknown_expired_and_inactive_users_tokens_are_refused(user):
    _, text = AuthToken.objects.create(user=user)
    with pytest.raises(exceptions.AuthenticationFailed, match="Invalid token"):
        TokenAuthentication().authenticate_credentials(b"no-such-token")
    with pytest.raises(exceptions.AuthenticationFailed, match="Invalid token"):
        TokenAuthentication().authenticate_credentials("é".encode())
    _, old = AuthToken.objects.create(user=user, expiry=timedelta(seconds=-1))
    with pytest.raises(exceptions.AuthenticationFailed, match="expired"):
        TokenAuthentication().authenticate_credentials(old.encode())
    assert AuthToken.objects.filter(user=user).count() == 1  # the expired one is gone
    User.objects.filter(pk=user.pk).update(is_active=False)
    with pytest.raises(exceptions.AuthenticationFailed, match="inactive"):
        TokenAuthentication().authenticate_credentials(text.encode())


def test_a_token_past_its_expiry_gets_401(user, settings):
    settings.CDC_API_AUTH_CACHE_SECONDS = 0  # the expiry as the database holds it
    stored, text = AuthToken.objects.create(user=user, expiry=timedelta(days=90))
    client = APIClient(HTTP_AUTHORIZATION=f"Token {text}")
    assert client.get("/api/v1/streams/").status_code == 200
    AuthToken.objects.filter(pk=stored.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/v1/streams/").status_code == 401


def test_a_kept_token_is_refused_once_its_expiry_passes(user, monkeypatch):
    # given a token read once, so that its credentials are kept
    stored, text = AuthToken.objects.create(user=user, expiry=timedelta(hours=1))
    client = APIClient(HTTP_AUTHORIZATION=f"Token {text}")
    assert client.get("/api/v1/streams/").status_code == 200
    # when the clock passes its expiry, then the kept token is refused, and deleted
    later = stored.expiry + timedelta(seconds=1)
    monkeypatch.setattr("cdcweb.auth.timezone.now", lambda: later)
    answer = client.get("/api/v1/streams/")
    assert answer.status_code == 401
    assert "expired" in answer.json()["detail"]
    assert not AuthToken.objects.filter(pk=stored.pk).exists()
