"""Every view of a stream's lag reads the one read model: they agree, end timestamp or not."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from prometheus_client.parser import text_string_to_metric_families

from tests.factories import T0

pytestmark = pytest.mark.django_db
NOW = T0 + timedelta(hours=1)


@pytest.fixture
def streams(make_stream, make_partition, monkeypatch):
    """Return a live stream 50 minutes behind, and one 10 minutes short of an end 30 minutes back."""
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    live = make_stream("live", state="RUNNING")
    make_partition(live, minutes=10)
    make_partition(live, minutes=40)
    ended = make_stream("ended", state="RUNNING", end_at=T0 + timedelta(minutes=30))
    make_partition(ended, minutes=20)
    return {"live": (live, 50 * 60.0), "ended": (ended, 10 * 60.0)}


def metrics_lag(client) -> dict[str, float]:
    text = client.get("/metrics").content.decode()
    family = next(f for f in text_string_to_metric_families(text) if f.name == "cdc_stream_lag_seconds")
    return {sample.labels["stream"]: sample.value for sample in family.samples}


@pytest.mark.parametrize("name", ["live", "ended"])
def test_page_api_metrics_and_cli_give_the_same_lag(client, admin_user, streams, name):
    stream, expected = streams[name]
    client.force_login(admin_user)
    # the stream's page panel, its partition table, the API, /metrics and the CLI
    panel = client.get(f"/streams/{stream.pk}/panel/").context["s"]["lag_seconds"]
    table = client.get(f"/streams/{stream.pk}/partitions/").context["page"]
    api = client.get(f"/api/v1/streams/{stream.pk}/").json()["lag_seconds"]
    out = io.StringIO()
    call_command("cdc_stream", "status", stream.name, "--json", stdout=out)
    cli = json.loads(out.getvalue())["lag_seconds"]
    # then all say the same, measured to the end when the end comes before now
    assert panel == api == metrics_lag(client)[name] == cli == expected
    assert max(p.lag_seconds for p in table) == expected
