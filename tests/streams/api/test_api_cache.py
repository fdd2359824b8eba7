"""The micro-cache of polled API reads: hits, expiry, invalidation on state changes, no leak past auth."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from partitions.models import Partition
from streams.models import Stream
from tests.factories.api import token_for

POLLED = ("", "partitions/?ordering=-lag", "lag/?since=-10m", "lineage/?since=-10m")


def _detail_url(stream: Stream) -> str:
    return f"/api/v1/streams/{stream.pk}/"


def _read(client: APIClient, url: str) -> tuple[object, list[str]]:
    """GET url; return the response and the SQL it ran."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    return response, [q["sql"] for q in queries.captured_queries]


def _add_records(stream: Stream, n: int) -> None:
    """Change what the stream shows without going through a stream save (as the workers do)."""
    partition = Partition.objects.filter(stream=stream).first()
    Partition.objects.filter(pk=partition.pk).update(data_records=partition.data_records + n)


def test_a_repeated_read_is_answered_from_the_cache_without_touching_partitions(viewer, stream):
    # given a stream read once
    url = _detail_url(stream)
    first, _ = _read(viewer, url)
    _add_records(stream, 1000)
    # when it is read again within API_CACHE_SECONDS
    second, queries = _read(viewer, url)
    # then the same answer comes back, and only authentication touched the database
    assert second.status_code == 200
    assert second.content == first.content
    assert second["Content-Type"] == first["Content-Type"] == "application/json"
    assert second["Vary"] == first["Vary"]
    assert not [sql for sql in queries if "partitions_partition" in sql or "streams_stream" in sql]


def test_a_cached_answer_expires_after_api_cache_seconds(viewer, stream, settings, wait_for):
    # given a short cache and a stream read once
    settings.API_CACHE_SECONDS = 0.2
    url = _detail_url(stream)
    asked = time.monotonic()
    before = viewer.get(url).json()["data_records"]
    _add_records(stream, 1000)
    # when it is read again until the new records show
    wait_for("the new records", lambda: viewer.get(url).json()["data_records"] == before + 1000, timeout=30)
    # then they showed once the cache time had passed, not before
    assert time.monotonic() - asked >= 0.2


def test_zero_seconds_turns_the_cache_off(viewer, stream, settings):
    settings.API_CACHE_SECONDS = 0
    url = _detail_url(stream)
    before = viewer.get(url).json()["data_records"]
    _add_records(stream, 7)
    assert viewer.get(url).json()["data_records"] == before + 7


def test_pause_then_read_shows_the_new_state_at_once(operator, stream, django_capture_on_commit_callbacks):
    # given a running stream whose detail and list are cached
    url = _detail_url(stream)
    assert operator.get(url).json()["state"] == "RUNNING"
    assert operator.get("/api/v1/streams/").json()["results"][0]["state"] == "RUNNING"
    # when the operator pauses it
    with django_capture_on_commit_callbacks(execute=True):
        assert operator.post(f"{url}pause/").status_code == 200
    # then the next reads show DRAINING and the logged transition
    assert operator.get(url).json()["state"] == "DRAINING"
    assert operator.get("/api/v1/streams/").json()["results"][0]["state"] == "DRAINING"
    transitions = operator.get(f"{url}transitions/").json()["results"]
    assert transitions[-1]["to_state"] == "DRAINING"


def test_an_edit_through_the_api_shows_in_the_next_read(operator, stream):
    url = _detail_url(stream)
    assert operator.get(url).json()["heartbeat_ms"] != 5000
    assert operator.patch(url, {"heartbeat_ms": 5000}, format="json").status_code == 200
    assert operator.get(url).json()["heartbeat_ms"] == 5000


@pytest.mark.parametrize("suffix", POLLED)
def test_a_cached_path_still_refuses_anonymous_and_roleless_users(client_as, viewer, stream, suffix):
    # given a path whose answer a viewer has just put in the cache
    url = f"{_detail_url(stream)}{suffix}"
    assert viewer.get(url).status_code == 200
    # when an anonymous client and a user without a role ask for it
    anonymous = client_as("anonymous").get(url)
    nobody = APIClient()
    token = token_for(User.objects.create_user("nobody", password="pw"))
    nobody.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    roleless = nobody.get(url)
    bad_token = APIClient(HTTP_AUTHORIZATION="Token not-a-token").get(url)
    # then they get 401 and 403, not the cached answer
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"] == "Token"
    assert roleless.status_code == 403
    assert bad_token.status_code == 401
    assert b'"id"' not in anonymous.content + roleless.content + bad_token.content


def test_the_browsable_api_is_never_served_from_the_json_cache(operator, stream):
    url = _detail_url(stream)
    operator.get(url)
    page = operator.get(url, HTTP_ACCEPT="text/html")
    assert page["Content-Type"].startswith("text/html")
    assert b"otto" in page.content  # the browsable page names its user: never shared


def test_query_strings_are_cached_apart(viewer, stream):
    base = f"/api/v1/streams/{stream.pk}/partitions/"
    by_lag = viewer.get(f"{base}?ordering=-lag&page_size=5").json()["results"]
    by_start = viewer.get(f"{base}?page_size=5").json()["results"]
    assert [p["id"] for p in by_lag] != [p["id"] for p in by_start]


@pytest.mark.django_db(transaction=True)
def test_concurrent_misses_of_one_url_are_computed_once(client_as, users, monkeypatch):
    # given a lineage that takes a while to compute
    from partitions import queries
    from tests.factories.lineage import make_lineage_stream

    stream = make_lineage_stream("slow", 5)
    calls, real = [], queries.lineage

    def slow_lineage(*args, **kwargs):
        calls.append(1)
        time.sleep(0.3)  # a deliberately slow computation, so the four misses overlap: no state to wait for
        return real(*args, **kwargs)

    monkeypatch.setattr(queries, "lineage", slow_lineage)
    url = f"/api/v1/streams/{stream.pk}/lineage/"
    clients = [client_as("viewer") for _ in range(4)]
    # when four clients ask for it at once
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda client: client.get(url), clients))
    # then it was computed once and every client got the same answer
    assert [a.status_code for a in answers] == [200] * 4
    assert len({a.content for a in answers}) == 1
    assert len(calls) == 1
