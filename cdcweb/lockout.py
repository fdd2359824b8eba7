"""Who is guessing passwords: the client's address, and the two lockouts of django-axes.

The address is the TCP peer's, unless the site runs behind a proxy it trusts
(CDC_BEHIND_TLS_PROXY): then it is the last entry of X-Forwarded-For, the one that
proxy appended. Any entry before it was written by the client and proves nothing, so a
spoofed header neither locks someone else out nor escapes a lockout. Logins, the
token endpoint's lockout and its throttle all ask here.

Two lockouts hold at once: a user name at one address after CDC_LOGIN_FAILURE_LIMIT
wrong passwords, and an address across every user name after
CDC_LOGIN_ADDRESS_FAILURE_LIMIT (one address guessing many names). axes compares one
failure count with one limit; `LockoutHandler` scales the address's count so that it
reaches that limit exactly at its own.
"""

from __future__ import annotations

import ipaddress

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.db.models import Sum
from rest_framework.throttling import ScopedRateThrottle

# axes counts failures per (user name, address) and per address (settings.AXES_LOCKOUT_PARAMETERS).
NAME_AT_ADDRESS, ADDRESS = 0, 1


def client_address(request) -> str | None:
    """Return the client's IP address: the peer's, or the one the trusted proxy forwarded."""
    peer = request.META.get("REMOTE_ADDR") or None
    if not settings.CDC_BEHIND_TLS_PROXY:
        return peer
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    last = forwarded[-1] if forwarded else ""
    try:
        return str(ipaddress.ip_address(last))
    except ValueError:
        return peer  # no header (a health check from the proxy's host), or a broken one


class LockoutHandler(AxesDatabaseHandler):
    """axes' database handler with a second, larger limit per address across user names."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        """Return the failures that count: the name's at this address, or the address's, scaled."""
        counts = [
            attempts.aggregate(n=Sum("failures_since_start"))["n"] or 0
            for attempts in self.get_user_attempts(request, credentials)
        ]
        scaled = counts[ADDRESS] * settings.AXES_FAILURE_LIMIT // settings.CDC_LOGIN_ADDRESS_FAILURE_LIMIT
        return max(counts[NAME_AT_ADDRESS], scaled)

    def reset_user_attempts(self, request, credentials: dict | None = None) -> int:
        """Forget this name's failures at this address after it logs in; the address's others still count.

        axes would delete every failure of the address too, so one good login every few
        guesses would keep an address that tries many names from ever being locked out.
        """
        name_at_address = self.filter_user_attempts(request, credentials)[NAME_AT_ADDRESS]
        return name_at_address.delete()[0]


class AddressRateThrottle(ScopedRateThrottle):
    """DRF's scoped throttle, keyed by the same client address as the lockouts."""

    def get_ident(self, request) -> str:
        """Return the client's address as client_address() finds it."""
        return client_address(request) or ""
