"""Logs: a server error reaches stderr with its traceback, as one JSON line carrying the request's id."""

from __future__ import annotations

import io
import json
import logging.config
import sys
import uuid

import pytest
from django.conf import settings as django_settings
from django.test import Client

from tests.factories.ops import _fresh_health, django_db_setup  # noqa: F401 - the operations tests' fixtures


@pytest.fixture
def stderr(monkeypatch):
    """Return what the project's LOGGING writes to stderr during the test."""
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stderr", captured)
    logging.config.dictConfig(django_settings.LOGGING)  # its handler takes sys.stderr as it is now
    yield captured
    monkeypatch.undo()
    logging.config.dictConfig(django_settings.LOGGING)


def _records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.urls("tests.cdcweb.broken_urls")
def test_a_server_error_is_one_line_with_its_traceback_and_request_id(db, stderr):
    client = Client(raise_request_exception=False)
    # when a view fails
    response = client.get("/fail/")
    # then the client gets a 500 with the request's id, and stderr one JSON line per record
    assert response.status_code == 500
    request_id = response["X-Request-ID"]
    assert uuid.UUID(request_id)
    records = _records(stderr.getvalue())
    errors = [r for r in records if r["level"] == "ERROR"]
    assert len(errors) == 1
    error = errors[0]
    assert error["logger"] == "django.request"
    assert error["request_id"] == request_id
    assert "Traceback (most recent call last)" in error["exc_info"]
    assert "RuntimeError: the disk is full\nsecond line of the message" in error["exc_info"]


@pytest.mark.urls("tests.cdcweb.broken_urls")
def test_a_proxy_s_request_id_is_kept_and_anything_else_replaced(db, stderr):
    client = Client(raise_request_exception=False)
    given = str(uuid.uuid4())
    assert client.get("/fail/", HTTP_X_REQUEST_ID=given)["X-Request-ID"] == given
    forged = client.get("/fail/", HTTP_X_REQUEST_ID='x", "level": "INFO')["X-Request-ID"]
    assert uuid.UUID(forged)
    logged = [r["request_id"] for r in _records(stderr.getvalue()) if r["level"] == "ERROR"]
    assert logged == [given, forged]


def test_a_record_outside_a_request_has_no_request_id(stderr):
    logging.getLogger("cdcweb.test").warning("no request here")
    (record,) = _records(stderr.getvalue())
    assert record["message"] == "no request here"
    assert record["request_id"] is None
