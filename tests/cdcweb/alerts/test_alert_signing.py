"""Webhook signature checks, ours and the README's for receivers: False for a bad request, never an error."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from django.conf import settings

from cdcweb.alerts.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign, verify

SECRET = "a-secret-of-32-characters-long!!"
BODY = b'{"event": "firing"}'


def readme_verify():
    """Return the verify() the README shows receivers, run as they would copy it."""
    text = (Path(settings.BASE_DIR) / "README.md").read_text()
    (code,) = [c for c in re.findall(r"```python\n(.*?)```", text, re.S) if "def verify(" in c]
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
    return namespace["verify"]


def headers(stamp: str | None, signature: str | None) -> dict:
    sent = {TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: signature}
    return {k: v for k, v in sent.items() if v is not None}


def fresh() -> tuple[str, str]:
    """Return now as a timestamp and the body's good signature at it.

    Made when the test runs, not at import: verify refuses an old timestamp, and a test
    may run minutes after its module was collected (the workers of `make test`).
    """
    now = str(int(time.time()))
    return now, sign(SECRET, now, BODY)


def bad(case: str) -> tuple[str | None, str | None]:
    """Return the (timestamp, signature) of a bad request, made now."""
    now, good = fresh()
    old = str(int(time.time()) - 3600)
    return {
        "no timestamp": (None, good),
        "no signature": (now, None),
        "neither": (None, None),
        "a timestamp that is not a number": ("soon", good),
        "a negative timestamp": ("-1", good),
        "digits of another script": ("١٧٦٣٩٠٠٠٠٠", good),
        "a signature with non-ASCII text": (now, "sha256=é" + good[8:]),
        "an empty signature": (now, ""),
        "another body's signature": (now, sign(SECRET, now, b"{}")),
        "an old timestamp": (old, sign(SECRET, old, BODY)),
    }[case]


BAD = ["no timestamp", "no signature", "neither", "a timestamp that is not a number", "a negative timestamp",
       "digits of another script", "a signature with non-ASCII text", "an empty signature",
       "another body's signature", "an old timestamp"]  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_the_readme_receiver_refuses_a_bad_request_without_raising(case):
    assert readme_verify()(SECRET, headers(*bad(case)), BODY) is False


def test_the_readme_receiver_accepts_a_good_request():
    assert readme_verify()(SECRET, headers(*fresh()), BODY) is True


@pytest.mark.parametrize("case", [c for c in BAD if None not in bad(c)])
def test_our_verify_refuses_them_too(case):
    stamp, signature = bad(case)
    assert verify(SECRET, stamp, BODY, signature) is False
    now, good = fresh()
    assert verify(SECRET, now, BODY, good) is True
