"""Authentication and permissions of every request, each in one small static query.

Measured under 50 polling clients (benchmarks/api_load.py): a cached API answer
cost ~3 ms of CPU, two thirds of it building the ORM queries of token
authentication (select_related, ~0.9 ms) and of ModelBackend's permissions (two
queries, or one UNION at ~1.4 ms). The same reads as fixed SQL cost ~0.2 ms each.
So an API request costs two queries to authenticate and authorize, whatever the
user holds: the token with its user, and the user's permissions.

Measured again (2026-11-27), those two queries were half the CPU of a cached answer.
So both answers are also kept in the cache for CDC_API_AUTH_CACHE_SECONDS (1 s by
default, 0 turns it off) under a generation, as streams/api/cache.py keeps answers:
saving or deleting a token, a user, a group or a permission, or changing who is in a
group or holds a permission, starts a new generation at once and again on commit. So
within one process (or every process, with a shared cache: CACHE_URL) a revoked token
is refused and a removed role denied on the next request; other processes on the
default local-memory cache follow within the cache's seconds. A token's expiry is
checked on every request, cached or not. Changes that bypass signals (a queryset's
update(), raw SQL) are seen within the cache's seconds.
"""

from __future__ import annotations

import binascii
from functools import cache

import knox.auth
from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from knox.crypto import hash_token
from knox.models import AuthToken
from rest_framework import exceptions

from streams.api.cache import Generations

CREDENTIALS = Generations("auth:generation")


def _remembered(key: str) -> tuple[object | None, str | None]:
    """Return (the value kept under key if current, the generation); (None, None) when the cache is off."""
    if settings.CDC_API_AUTH_CACHE_SECONDS <= 0:
        return None, None
    return CREDENTIALS.lookup(key)


def _remember(key: str, generation: str | None, value) -> None:
    """Keep value under key for CDC_API_AUTH_CACHE_SECONDS, as of generation (None: the cache is off)."""
    if generation is not None:
        CREDENTIALS.store(key, generation, value, settings.CDC_API_AUTH_CACHE_SECONDS)


def forget_credentials(**_signal) -> None:
    """Drop every kept token and permission set, now and once the transaction commits (a signal receiver)."""
    if settings.CDC_API_AUTH_CACHE_SECONDS > 0:
        CREDENTIALS.invalidate_on_commit()


@cache
def _user_fields() -> list[str]:
    """Return the attribute names of the user model's columns, in order (what a kept user holds)."""
    return [field.attname for field in get_user_model()._meta.concrete_fields]


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _column(model, field: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(field).column)


@cache
def _permissions_sql() -> str:
    """Return the SQL of (app_label, codename) for the user's own and group permissions."""
    user_perms = get_user_model().user_permissions.through
    user_groups = get_user_model().groups.through
    group_perms = Group.permissions.through
    perm_id, user_id = _column(user_perms, "permission"), _column(user_perms, "user")
    gp_perm, gp_group = _column(group_perms, "permission"), _column(group_perms, "group")
    ug_group, ug_user = _column(user_groups, "group"), _column(user_groups, "user")
    return (
        f"SELECT ct.{_column(ContentType, 'app_label')}, p.{_column(Permission, 'codename')} "
        f"FROM {_table(Permission)} p JOIN {_table(ContentType)} ct "
        f"ON ct.{_column(ContentType, 'id')} = p.{_column(Permission, 'content_type')} "
        f"WHERE p.{_column(Permission, 'id')} IN ("
        f"SELECT {perm_id} FROM {_table(user_perms)} WHERE {user_id} = %s UNION "
        f"SELECT gp.{gp_perm} FROM {_table(group_perms)} gp JOIN {_table(user_groups)} ug "
        f"ON ug.{ug_group} = gp.{gp_group} WHERE ug.{ug_user} = %s)"
    )


class OneQueryModelBackend(ModelBackend):
    """ModelBackend whose get_all_permissions reads the user's own and group permissions together.

    Every API request checks one permission; ModelBackend answers it with two ORM
    queries (the user's permissions, their groups'). One fixed query returns the same set.
    """

    def get_all_permissions(self, user_obj, obj=None) -> set[str]:
        """Return "app_label.codename" of every permission the active user holds (all for superusers)."""
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if not hasattr(user_obj, "_perm_cache"):
            key = f"auth:permissions:{user_obj.pk}"
            perms, generation = _remembered(key)
            if perms is None:
                perms = frozenset(f"{app}.{codename}" for app, codename in self._permission_rows(user_obj))
                _remember(key, generation, perms)
            user_obj._perm_cache = set(perms)
        return user_obj._perm_cache

    @staticmethod
    def _permission_rows(user_obj) -> list[tuple[str, str]]:
        if user_obj.is_superuser:
            return list(Permission.objects.values_list("content_type__app_label", "codename").order_by())
        with connection.cursor() as cursor:
            cursor.execute(_permissions_sql(), [user_obj.pk, user_obj.pk])
            return cursor.fetchall()


@cache
def _token_sql() -> str:
    """Return the SQL of a token's user (all columns) with the token's own columns, by its digest."""
    user_model = get_user_model()
    return (
        f"SELECT u.*, t.{_column(AuthToken, 'token_key')} AS token_key, "
        f"t.{_column(AuthToken, 'created')} AS token_created, "
        f"t.{_column(AuthToken, 'expiry')} AS token_expiry FROM {_table(AuthToken)} t "
        f"JOIN {_table(user_model)} u ON u.{_column(user_model, 'id')} = t.{_column(AuthToken, 'user')} "
        f"WHERE t.{_column(AuthToken, 'digest')} = %s"
    )


def _from_db(field: str, value):
    """Convert a raw token column as the ORM would (SQLite returns timestamps as text)."""
    column = AuthToken._meta.get_field(field).get_col(AuthToken._meta.db_table)
    for convert in connection.ops.get_db_converters(column) + column.get_db_converters(connection):
        value = convert(value, column, connection)
    return value


class TokenAuthentication(knox.auth.TokenAuthentication):
    """Knox's hashed, expiring tokens ("Authorization: Token ..."), token and user read in one fixed query.

    Knox itself finds the token by its first characters with its user, then reads every
    other token of the user to delete the expired ones: two ORM queries a request. Here the
    token is found by its digest (the primary key), an expired one is refused (and deleted),
    and `manage.py cdc_token --purge-expired` deletes the rest.
    """

    def authenticate_credentials(self, token: bytes):
        """Return (user, token) for an active user's unexpired token; 401 otherwise, as knox does."""
        try:
            digest = hash_token(token.decode("ascii"))
        except (UnicodeDecodeError, binascii.Error, TypeError):
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        user, token_key, created, expiry = self._credentials(digest)
        if expiry is not None and expiry <= timezone.now():
            AuthToken.objects.filter(digest=digest).delete()
            raise exceptions.AuthenticationFailed("Token expired.")
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        fields = ["digest", "token_key", "user_id", "created", "expiry"]
        values = [digest, token_key, user.pk, created, expiry]
        auth_token = AuthToken.from_db(connection.alias, fields, values)
        auth_token.user = user
        return user, auth_token

    @staticmethod
    def _credentials(digest: str) -> tuple:
        """Return (user, token_key, created, expiry) of a token, kept or read in one query; 401 if unknown."""
        user_model, fields = get_user_model(), _user_fields()
        key = f"auth:token:{digest}"
        kept, generation = _remembered(key)
        if kept is not None:
            values, token_key, created, expiry = kept
            return user_model.from_db(connection.alias, fields, values), token_key, created, expiry
        user = next(iter(user_model.objects.raw(_token_sql(), [digest])), None)
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        created, expiry = _from_db("created", user.token_created), _from_db("expiry", user.token_expiry)
        values = [getattr(user, field) for field in fields]
        _remember(key, generation, (values, user.token_key, created, expiry))
        return user, user.token_key, created, expiry


class TokenScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme of TokenAuthentication: "Authorization: Token <token>"."""

    target_class = "cdcweb.auth.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        """Return the header scheme, as drf-spectacular describes DRF's and knox's tokens."""
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Token")


class LockoutBackend(AxesStandaloneBackend):
    """django-axes' lockout check, for logins that come with a request (form, admin, token endpoint).

    An authenticate() call without one (a script, the test client's login) is no one
    guessing passwords over the network: it is left to the next backend.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        """Refuse a locked-out user name and address (403), or pass to the next backend."""
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
