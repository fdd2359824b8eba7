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


NOW = str(int(time.time()))
GOOD = sign(SECRET, NOW, BODY)
BAD = {
    "no timestamp": (None, GOOD),
    "no signature": (NOW, None),
    "neither": (None, None),
    "a timestamp that is not a number": ("soon", GOOD),
    "a negative timestamp": ("-1", GOOD),
    "digits of another script": ("١٧٦٣٩٠٠٠٠٠", GOOD),
    "a signature with non-ASCII text": (NOW, "sha256=é" + GOOD[8:]),
    "an empty signature": (NOW, ""),
    "another body's signature": (NOW, sign(SECRET, NOW, b"{}")),
    "an old timestamp": (str(int(time.time()) - 3600), sign(SECRET, str(int(time.time()) - 3600), BODY)),
}


@pytest.mark.parametrize("case", list(BAD))
def test_the_readme_receiver_refuses_a_bad_request_without_raising(case):
    assert readme_verify()(SECRET, headers(*BAD[case]), BODY) is False


def test_the_readme_receiver_accepts_a_good_request():
    assert readme_verify()(SECRET, headers(NOW, GOOD), BODY) is True


@pytest.mark.parametrize("case", [c for c in BAD if None not in BAD[c]])
def test_our_verify_refuses_them_too(case):
    stamp, signature = BAD[case]
    assert verify(SECRET, stamp, BODY, signature) is False
    assert verify(SECRET, NOW, BODY, GOOD) is True
