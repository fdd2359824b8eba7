"""The webhook signature: HMAC-SHA256 over the timestamp and the raw body, keyed by the channel's secret.

A webhook request carries

    X-Cdcweb-Timestamp: 1763900000                 (unix seconds when it was signed)
    X-Cdcweb-Signature: sha256=<64 hex digits>     (HMAC-SHA256(secret, timestamp + "." + body))

A receiver recomputes the HMAC over the bytes it received (before parsing the JSON),
compares in constant time, and refuses timestamps too far from its clock so a captured
request cannot be replayed later. ``verify`` below is that check; it is pure Python so
a receiver can copy it as is.
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-Cdcweb-Signature"
TIMESTAMP_HEADER = "X-Cdcweb-Timestamp"
# How far a receiver's clock may be from the sender's before it refuses a request.
TOLERANCE_SECONDS = 300


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """Return the signature header's value for a body sent at timestamp (unix seconds, as text)."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify(
    secret: str, timestamp: str, body: bytes, signature: str, now: float | None = None,
    tolerance: float = TOLERANCE_SECONDS,
) -> bool:  # fmt: skip
    """Return True if the signature is the body's and the timestamp is within tolerance of now.

    Anything else is False, never an exception: a missing or non-numeric timestamp (digits
    of other scripts included, which int() would read) or a signature of non-ASCII text.
    """
    timestamp, signature = timestamp or "", signature or ""
    if not (timestamp.isascii() and timestamp.isdigit() and signature.isascii()):
        return False
    age = abs((time.time() if now is None else now) - int(timestamp))
    return age <= tolerance and hmac.compare_digest(sign(secret, timestamp, body), signature)
