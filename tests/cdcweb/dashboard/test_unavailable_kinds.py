"""Kinds whose pipeline is not finished are refused, with a reason, everywhere
a stream is created: the API, the admin and the CLI."""

from __future__ import annotations

from html import escape

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from partitions.sources import KINDS
from streams.models import Stream

pytestmark = pytest.mark.django_db


def test_every_kind_can_be_created_today():
    assert sorted(name for name, kind in KINDS.items() if not kind.unavailable) == [
        "bigtable",
        "datastream",
        "spanner_change_stream",
        "spanner_commit_timestamp",
    ]


# The API's refusal: tests/cdcweb/dashboard/api/test_api_streams.py (its operator fixture lives there).


def test_the_admin_add_form_says_why(admin_client, unfinished_kind):
    kind = unfinished_kind
    url = reverse("admin:streams_stream_add") + f"?source_kind={kind}"
    page = admin_client.post(url, {"name": "x", "heartbeat_ms": 2000, "start_at": "-5m"})
    assert page.status_code == 200
    assert escape(KINDS[kind].unavailable) in page.content.decode()
    assert not Stream.objects.exists()


def test_the_cli_refuses_with_one_line_naming_kind(unfinished_kind):
    kind = unfinished_kind
    with pytest.raises(CommandError) as refused:
        call_command("cdc_stream", "create", "x", "--kind", kind, "--project", "p")
    assert "--kind: " in str(refused.value)
    assert not Stream.objects.exists()
