"""Where alert channels may send: checked when a channel is saved and again at every send.

A channel's URL must be https://, and every address its host resolves to must be public
(not loopback, private, link-local, shared, multicast, reserved or unspecified) unless it
falls in CDC_WEBHOOK_ALLOW_NETWORKS; plain http:// is allowed only when every address does.
The request then connects to the address that was checked (no second lookup a DNS answer
could change in between), follows no redirect, reads no body, and has a short timeout.
Whatever goes wrong on the wire is told the same way, so the errors cannot map a network.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
ALLOW_SETTING = "CDC_WEBHOOK_ALLOW_NETWORKS"
UNREACHABLE = "could not reach the receiver (no connection, or no answer in time)"


class Refused(ValueError):
    """The URL may not be sent to; the message says why in plain words."""


class Unresolved(Refused):
    """The URL's host does not resolve (now: DNS may answer later)."""


@dataclass(frozen=True)
class Target:
    """A URL whose host was resolved and checked: where to connect and what to ask for."""

    scheme: str
    host: str
    port: int
    path: str
    address: str


def allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """Return CDC_WEBHOOK_ALLOW_NETWORKS as networks (settings.py has checked each one)."""
    return [ipaddress.ip_network(text, strict=False) for text in settings.CDC_WEBHOOK_ALLOW_NETWORKS]


def kind_of(address: Address) -> str | None:
    """Return what makes the address internal ("loopback", "private", ...), or None if public."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for kind in ("unspecified", "loopback", "link_local", "multicast", "reserved", "private"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "non-public"


def _addresses(host: str, port: int) -> list[Address]:
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise Unresolved(f"the host {host} does not resolve") from None
    found = dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in answers)
    if not found:
        raise Unresolved(f"the host {host} does not resolve")
    return list(found)


def check(url: str) -> Target:
    """Return where to send for the URL, or raise Refused saying why it may not be sent to."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http"):
        raise Refused(f"use an https:// URL (not {parts.scheme or 'no scheme'})")
    if parts.username is not None or parts.password is not None:
        raise Refused("put no user name or password in the URL (the notice is signed instead)")
    try:
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise Refused("the URL's port is not a number from 1 to 65535") from None
    if not host:
        raise Refused("the URL names no host")
    networks = allowed_networks()
    addresses = _addresses(host, port)
    for address in addresses:
        internal = kind_of(address)
        if internal and not any(address in network for network in networks):
            raise Refused(
                f"the host {host} is a {internal} address: alerts are not sent inside the network "
                f"unless {ALLOW_SETTING} includes it"
            )
    inside = all(any(a in network for network in networks) for a in addresses)
    if parts.scheme == "http" and not inside:
        raise Refused(f"use https://; plain http:// is allowed only to {ALLOW_SETTING}")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, host, port, path, str(addresses[0]))


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to a checked address, whatever the host name would resolve to now."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """An HTTPS connection to a checked address; the certificate is checked against the host name."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self.address = target.address

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def post(target: Target, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """POST the body to the checked target and return the HTTP status; raise OSError on the wire."""
    connection_class = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    connection = connection_class(target, timeout)
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        return connection.getresponse().status
    except http.client.HTTPException as error:
        raise OSError(str(error)) from error
    finally:
        connection.close()
