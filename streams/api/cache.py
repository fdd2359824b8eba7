"""A short server-side cache of the API's read-only JSON answers, for dashboards that poll.

Fifty open dashboards poll the same handful of URLs every few seconds; each answer
costs 10-40 ms of aggregates over 10,000 partitions. Within API_CACHE_SECONDS (1 s by
default) the same URL is answered from Django's cache instead.

What keeps it correct:
- The lookup runs after authentication, permissions and content negotiation
  (APIView.initial), so an anonymous request still gets 401 and a user without the
  read permission 403, whatever is cached. Every reader may read every stream, so
  one answer serves all of them.
- Only 200 answers rendered as JSON are stored (never the browsable API, which shows
  the user and a CSRF token), keyed by the host, the path, the query parameters the
  view reads (filters, search, pagination, the lineage's window; any other parameter
  is left out, so made-up ones cannot fill the cache with copies) and the media type.
- Answers over CDC_API_CACHE_MAX_BYTES are not stored.
- Every stored answer carries the cache's generation; saving or deleting a stream
  (a state transition, an edit through the API or the admin) starts a new
  generation, and again once the transaction commits, so a client that pauses a stream and then
  reads it sees the new state. With the default local-memory cache that holds within
  one process; other processes see it within API_CACHE_SECONDS (or at once with a
  shared cache, CACHE_URL=redis://...). Partition progress written by the workers is
  at most API_CACHE_SECONDS old.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import caches
from django.db import transaction
from django.http import HttpResponse
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.filters import SearchFilter
from rest_framework.response import Response
from rest_framework.settings import api_settings

GENERATION_KEY = "api:generation"


def _cache():
    return caches["default"]


def enabled() -> bool:
    """Return True if answers are cached at all (API_CACHE_SECONDS > 0)."""
    return settings.API_CACHE_SECONDS > 0


def known_parameters(view) -> set[str]:
    """Return the query parameters the view reads: its filters, search, pagination and window."""
    names = set(getattr(view, "cached_query_parameters", ()))
    backends = getattr(view, "filter_backends", ())
    filterset = getattr(view, "filterset_class", None)
    if filterset is not None and DjangoFilterBackend in backends:
        names.update(filterset.base_filters)
    if SearchFilter in backends:
        names.add(api_settings.SEARCH_PARAM)
    paginator = getattr(view, "paginator", None)
    names.update(
        getattr(paginator, attribute) or ""
        for attribute in ("page_query_param", "page_size_query_param")
        if hasattr(paginator, attribute)
    )
    names.discard("")
    return names


def key_for(request, view=None) -> str | None:
    """Return the cache key of a cacheable request (a GET answered as JSON), else None."""
    renderer = getattr(request, "accepted_renderer", None)
    if not enabled() or request.method != "GET" or renderer is None or renderer.format != "json":
        return None
    known = known_parameters(view) if view is not None else set(request.query_params)
    query = urlencode(sorted((k, v) for k, v in request.query_params.lists() if k in known), doseq=True)
    url = f"{request.build_absolute_uri(request.path)}?{query}|{request.accepted_media_type}"
    return "api:answer:" + hashlib.sha256(url.encode()).hexdigest()


class Generations:
    """Values kept in Django's cache under a generation: starting a new generation drops them all.

    A reader looks a value up and, on a miss, keeps what it then reads under the
    generation returned by the lookup, read before it queried: a value computed while
    the data changed is never mistaken for one of the new generation. The API's answers
    (below) and the API's credentials (cdcweb/auth.py) are kept this way.
    """

    def __init__(self, generation_key: str) -> None:
        self.generation_key = generation_key

    def lookup(self, key: str) -> tuple[object | None, str]:
        """Return (the value kept under key if of the current generation, the generation); one cache read."""
        cache = _cache()
        found = cache.get_many([self.generation_key, key])
        generation = found.get(self.generation_key)
        if generation is None:  # the first: two processes starting one agree, add() keeps the first
            cache.add(self.generation_key, uuid.uuid4().hex, timeout=None)
            generation = cache.get(self.generation_key)
        stored = found.get(key)
        if stored is None or stored[0] != generation:
            return None, generation
        return stored[1], generation

    def store(self, key: str, generation: str, value, seconds: float) -> None:
        """Keep value under key for `seconds`, as of `generation` (the one its lookup returned)."""
        _cache().set(key, (generation, value), timeout=seconds)

    def invalidate(self) -> None:
        """Start a new generation: every value kept before is ignored from now on."""
        _cache().set(self.generation_key, uuid.uuid4().hex, timeout=None)

    def invalidate_on_commit(self) -> None:
        """Invalidate now and again once the transaction commits.

        Now, for the writer's own next read even inside an outer transaction; on commit,
        because a value computed in between still read the old rows.
        """
        self.invalidate()
        transaction.on_commit(self.invalidate)


ANSWERS = Generations(GENERATION_KEY)


def lookup(key: str) -> tuple[HttpResponse | None, str]:
    """Return (the stored answer if it is of the current generation, the generation); one cache read."""
    stored, generation = ANSWERS.lookup(key)
    if stored is None:
        return None, generation
    status, content_type, content = stored
    return HttpResponse(content, status=status, content_type=content_type), generation


def store(key: str, generation: str, response: Response) -> None:
    """Keep a rendered 200 answer for API_CACHE_SECONDS, unless it is larger than CDC_API_CACHE_MAX_BYTES."""
    if response.status_code != 200 or len(response.content) > settings.CDC_API_CACHE_MAX_BYTES:
        return
    value = (response.status_code, response["Content-Type"], response.content)
    ANSWERS.store(key, generation, value, settings.API_CACHE_SECONDS)


def invalidate() -> None:
    """Start a new generation of answers: every answer stored before is ignored from now on."""
    ANSWERS.invalidate()


def invalidate_on_commit(**_signal) -> None:
    """Invalidate the answers now and again once the transaction commits (a receiver of Stream saves)."""
    if enabled():
        ANSWERS.invalidate_on_commit()


# Striped, so memory stays bounded whatever URLs arrive; two URLs sharing a stripe
# only compute their misses one after the other.
_FILL_LOCKS = tuple(threading.Lock() for _ in range(64))
FILL_WAIT_SECONDS = 10  # then compute anyway: a stuck fill must not stall every reader


class _CachedAnswer(Exception):  # noqa: N818 - control flow, not an error
    """Raised by initial() to skip the handler; handle_exception returns the answer."""

    def __init__(self, response: HttpResponse) -> None:
        super().__init__()
        self.response = response


class CachedReadMixin:
    """Answer repeated GETs of a viewset from the cache; see the module docstring for the rules."""

    def initial(self, request, *args, **kwargs):
        """Authenticate, check permissions and negotiate, then answer from the cache if it can.

        On a miss, wait for another thread of this process that is computing the same
        answer (its fill lock), then look again: a miss is computed once, not once
        per thread that asked while it was being computed.
        """
        super().initial(request, *args, **kwargs)
        self.api_cache_key = key = key_for(request, self)
        if key is None:
            return
        response, generation = lookup(key)
        if response is None:
            lock = _FILL_LOCKS[hash(key) % len(_FILL_LOCKS)]
            if lock.acquire(timeout=FILL_WAIT_SECONDS):
                self._api_cache_fill_lock = lock
                response, generation = lookup(key)
        self.api_cache_generation = generation
        if response is not None:
            raise _CachedAnswer(response)

    def dispatch(self, request, *args, **kwargs):
        """Dispatch as DRF does, and always give back the fill lock taken on a miss."""
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            lock = self.__dict__.pop("_api_cache_fill_lock", None)
            if lock is not None:
                lock.release()

    def handle_exception(self, exc):
        """Return a cached answer as is; handle real exceptions as DRF does."""
        if isinstance(exc, _CachedAnswer):
            return exc.response
        return super().handle_exception(exc)

    def finalize_response(self, request, response, *args, **kwargs):
        """Render a fresh 200 JSON answer now and store it, before the fill lock is given back."""
        response = super().finalize_response(request, response, *args, **kwargs)
        key = getattr(self, "api_cache_key", None)
        if key is not None and isinstance(response, Response) and response.status_code == 200:
            response.render()
            store(key, self.api_cache_generation, response)
        return response
