"""Spanner queries wait for an unavailable server with backoff, then fail retryably.

The official client restarts a streaming query that fails with UNAVAILABLE at once and
for as long as it fails (``_restart_on_unavailable`` in spanner_v1/snapshot.py: no
backoff, no deadline, whatever the query's timeout). With its server gone, a reading
thread spun a whole core and never returned: its lease, renewed while the read lived,
kept every other reader away, and nothing showed on the stream. The call that opens the
stream takes a ``retry``; given this one, a server back within the budget is read on from
the resume token as before, and one that stays away ends the query with
``RetryError(UNAVAILABLE)``, which every Spanner kind reports as a retryable source error.
"""

from __future__ import annotations

from google.api_core import exceptions
from google.api_core.retry import AsyncRetry, Retry, if_exception_type

# About one lease (CDC_LEASE_SECONDS' default): a source back within it costs a read
# nothing; one down for longer shows on the stream as a retryable error and its backoff.
UNAVAILABLE_BUDGET_S = 60.0


# CANCELLED too: a restart that reached a server as it began to shut down is cancelled.
_RETRIED = if_exception_type(exceptions.ServiceUnavailable, exceptions.Cancelled)


def unavailable_retry(budget_s: float = UNAVAILABLE_BUDGET_S) -> Retry:
    """Return the retry for opening a query: after UNAVAILABLE (or CANCELLED), again and again for budget_s.

    api_core draws each pause at random up to 0.25, 0.5, 1, then 2 s, and gives up when
    the next pause would pass the budget: so within the budget's last 2 s, never sooner.
    """
    return Retry(predicate=_RETRIED, initial=0.25, multiplier=2.0, maximum=2.0, timeout=budget_s)


def unavailable_retry_async(budget_s: float = UNAVAILABLE_BUDGET_S) -> AsyncRetry:
    """Return the same retry for the asyncio client (a multiplexed live read's query)."""
    return AsyncRetry(predicate=_RETRIED, initial=0.25, multiplier=2.0, maximum=2.0, timeout=budget_s)
