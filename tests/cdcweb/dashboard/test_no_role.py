"""One rule of who may see what: a user in no role gets 403 from every page, endpoint and admin page.

The URLs are not listed here: the test walks the URL conf, so a page added later is
covered (or the walk fails, naming the pattern it could not fill in).
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404
from django.urls.resolvers import RegexPattern
from rest_framework.test import APIClient

from cdcweb.access import OPEN, is_api_view
from cdcweb.alerts.models import Alert, AlertRule, Channel, Silence
from cdcweb.reports.models import Report
from partitions.models import Partition
from streams.access import NO_ROLE
from tests.factories.api import token_for

GROUP = re.compile(r"\(\?P<(\w+)>")
# Endpoints that ignore the session: the token endpoint takes a password (a user in no role
# gets 403 for it: test_it_gets_no_token_either) and revoke takes the token it revokes.
NO_SESSION = {"api-token", "api-token-revoke"}
# Pages among the API's views: the docs page logs in through the form, so the session walk covers it.
NO_TOKEN = {"api-token", "api-docs"}
METHODS = ("get", "post", "delete")


def _fill_regex(regex: str, values: dict[str, str]) -> str:
    """Return a path matching a regex pattern: each named group replaced by its sample value."""
    out, i = [], 0
    while i < len(regex):
        group = GROUP.match(regex, i)
        if group:
            depth, j = 1, group.end()
            while depth:  # skip to the group's closing parenthesis
                depth += {"(": 1, ")": -1}.get(regex[j], 0) if regex[j - 1] != "\\" else 0
                j += 1
            out.append(values[group[1]])
            i = j
        else:
            out.append(regex[i])
            i += 1
    text = "".join(out).replace("\\.", ".").replace("/?", "/")
    return text.removeprefix("^").removesuffix("$").removesuffix("\\Z")


def _fill(pattern, values: dict[str, str]) -> str:
    text = str(pattern.pattern)
    if isinstance(pattern.pattern, RegexPattern):
        return _fill_regex(text, values)
    return re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values[m[1]], text)


def _walk(patterns, prefix: str, values: dict[str, str]):
    """Yield (path, pattern) for every view pattern under the given ones."""
    for pattern in patterns:
        here = prefix + _fill(pattern, values)
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, here, values)
        elif isinstance(pattern, URLPattern):
            yield "/" + here, pattern


@pytest.fixture
def rows(stream_with_parts):
    """Return a sample value for every URL parameter; ids name a row of every table."""
    # One id names a row of every table: the stream's. Given explicitly, since PostgreSQL's
    # sequences do not start again with each test (its transaction's rollback keeps them).
    n = stream_with_parts.pk
    rule = AlertRule.objects.create(pk=n, name="failed", kind="stream_failed", stream=stream_with_parts)
    channel = Channel.objects.create(pk=n, name="mail", kind="email", email_to=["ops@example.com"])
    silence = Silence.objects.create(pk=n, stream=stream_with_parts, ends_at="2999-01-01T00:00:00Z")
    alert = Alert.objects.create(pk=n, rule=rule, stream=stream_with_parts, kind=rule.kind, summary="failed")
    report = Report.objects.create(
        pk=n,
        stream=stream_with_parts,
        since="2026-01-01T00:00:00Z",
        until="2026-01-02T00:00:00Z",
        requested_by="otto",
    )
    partition = Partition.objects.filter(pk=n).first() or Partition.objects.create(
        pk=n,
        stream=stream_with_parts,
        token="no-role",
        start_at=stream_with_parts.start_at,
        watermark=stream_with_parts.start_at,
    )
    for row in (rule, channel, silence, alert, report, partition):
        assert row.pk == n
    assert partition.stream_id == n
    some = str(stream_with_parts.pk)
    return {"pk": some, "id": some, "stream_pk": some, "object_id": some,
              "action": "start", "table": "throughput", "app_label": "streams", "format": "json",
              "content_type_id": "1", "url": "nothing-here/", "uidb64": "MQ", "token": "x"}  # fmt: skip


def _paths(values) -> list[tuple[str, str]]:
    """Return (path, view name) of every view in the URL conf, each path checked to resolve to its view."""
    found = []
    for path, pattern in _walk(get_resolver().url_patterns, "", values):
        try:
            match = resolve(path)
        except Resolver404:
            pytest.fail(f"the walk built {path!r} from {pattern.pattern!r}, which does not resolve")
        found.append((path, match.view_name))
    return found


@pytest.fixture
def nobody(db):
    return User.objects.create_user("nobody", password="pw", is_staff=True)


def test_a_user_in_no_role_gets_403_from_every_page_endpoint_and_admin_page(client, rows, nobody):
    values = rows
    client.force_login(nobody)
    paths = _paths(values)
    assert len(paths) > 100  # the admin's, the API's and the pages' (a walk that found little proves little)
    answers = {
        (method, path): getattr(client, method)(path).status_code
        for path, name in paths
        if name not in OPEN | NO_SESSION
        for method in METHODS
    }
    assert {key: code for key, code in answers.items() if code != 403} == {}


def test_its_api_token_gets_403_from_every_api_endpoint_saying_why(rows, nobody):
    values = rows
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(nobody)}")
    api = [path for path, name in _paths(values) if is_api_view(resolve(path).func) and name not in NO_TOKEN]
    assert len(api) > 20
    answers = {(m, p): getattr(client, m)(p) for p in api for m in METHODS}
    assert {key: r.status_code for key, r in answers.items() if r.status_code != 403} == {}
    assert client.get("/api/v1/streams/").json()["detail"] == NO_ROLE


def test_it_gets_no_token_either(nobody):
    answer = APIClient().post("/api/v1/auth/token/", {"username": "nobody", "password": "pw"}, format="json")
    assert answer.status_code == 403
    assert "token" not in answer.json()


def test_the_walk_would_see_a_page_left_open(client, rows, users):
    # the same walk for a viewer finds pages that answer, so a 403 above is the rule's doing
    values = rows
    client.force_login(users["viewer"])
    answered = [path for path, name in _paths(values) if client.get(path).status_code == 200]
    assert "/" in answered
    assert "/alerts/" in answered
