"""A Bigtable stream's cost report rests on the fourth seed's figures, each shown with its source."""

from __future__ import annotations

import pytest

from cdcweb.reports.assumptions import price_model
from partitions.sources.bigtable.kind import KIND
from streams.models import Stream
from tests.factories import T0

pytestmark = pytest.mark.django_db
SETTINGS = {"project": "my-project", "instance": "my-instance", "table": "events", "app_profile": "cdc"}


def test_the_price_model_takes_the_seeds_cpu_and_storage_figures_and_the_streams_retention():
    # given a Bigtable stream whose table keeps changes three days
    connection = KIND.clean({**SETTINGS, "retention_hours": 72})
    stream = Stream.objects.create(name="bt", source_kind="bigtable", connection=connection, start_at=T0)
    # when its report's price model is built
    rows = {row.name: row for row in price_model(stream)}
    # then each seed figure is there with its source beside it
    assert rows["retention_days"].value == 3
    assert (rows["cpu_share_enabled"].value, rows["overhead_factor"].value) == (0.10, 1.5)
    assert (rows["cpu_share_read_low"].value, rows["cpu_share_read_high"].value) == (0.20, 0.30)
    for name in ("cpu_share_enabled", "cpu_share_read_low", "overhead_factor"):
        assert "seed 003" in rows[name].source
    assert "list price" in rows["storage_usd_per_gib_month"].source


def test_an_operators_price_replaces_the_kinds_and_says_so(settings):
    settings.CDC_PRICE_MODEL = {**settings.CDC_PRICE_MODEL, "nodes": "3"}
    stream = Stream.objects.create(
        name="bt", source_kind="bigtable", connection=KIND.clean(SETTINGS), start_at=T0
    )
    (nodes,) = [row for row in price_model(stream) if row.name == "nodes"]
    assert nodes.value == 3.0
    assert "CDC_PRICE_NODES" in nodes.source
