"""cdcweb.auth: token authentication and permissions as DRF and Django give them, each in one query."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from cdcweb.auth import OneQueryModelBackend, TokenAuthentication
from streams.roles import VIEWERS, ensure_roles


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


def test_a_token_gives_its_user_and_the_stored_token_in_one_query(user):
    token = Token.objects.create(user=user)
    with CaptureQueriesContext(connection) as queries:
        found_user, found_token = TokenAuthentication().authenticate_credentials(token.key)
    assert len(queries) == 1
    expected_user, expected_token = authentication.TokenAuthentication().authenticate_credentials(token.key)
    assert (found_user.pk, found_user.username, found_user.is_active) == (user.pk, "vera", True)
    assert found_user.date_joined == expected_user.date_joined
    assert (found_token.key, found_token.user_id, found_token.created) == (
        expected_token.key,
        expected_token.user_id,
        expected_token.created,
    )


def test_unknown_tokens_and_inactive_users_are_refused(user):
    token = Token.objects.create(user=user)
    with pytest.raises(exceptions.AuthenticationFailed, match="Invalid token"):
        TokenAuthentication().authenticate_credentials("no-such-token")
    User.objects.filter(pk=user.pk).update(is_active=False)
    with pytest.raises(exceptions.AuthenticationFailed, match="inactive"):
        TokenAuthentication().authenticate_credentials(token.key)
