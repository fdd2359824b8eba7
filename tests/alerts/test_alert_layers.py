"""Alerts sit beside the dashboard and reports, above streams and partitions: imports run one way."""

from __future__ import annotations

import pytest

from tests.test_layers import ROOT, imported, modules, rel

BELOW = [p for package in ("streams", "partitions") for p in modules(package)]
ALERTS = [p for p in modules("cdcweb") if "alerts" in p.relative_to(ROOT).parts]


@pytest.mark.parametrize("path", BELOW, ids=rel)
def test_streams_and_partitions_import_nothing_of_alerts(path):
    assert not [name for name, _ in imported(path) if name.startswith("cdcweb.alerts")]


@pytest.mark.parametrize("path", ALERTS, ids=rel)
def test_alerts_import_neither_the_dashboard_nor_reports(path):
    # the dashboard shows firing alerts, so alerts must not need the dashboard back
    names = [name for name, _ in imported(path)]
    assert not [n for n in names if n.startswith(("cdcweb.dashboard", "cdcweb.reports"))], names
