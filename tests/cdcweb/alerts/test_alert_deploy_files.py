"""deploy/: the Prometheus alerting rules pass promtool, and the Grafana dashboard its schema.

Both read only metric names /metrics exports (cdcweb.ops), so a renamed family breaks here,
not silently on someone's dashboard.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from cdcweb.ops import StreamCollector

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
RULES = DEPLOY / "prometheus" / "cdcweb-alerts.yml"
RULES_TEST = DEPLOY / "prometheus" / "cdcweb-alerts.test.yml"
DASHBOARD = DEPLOY / "grafana" / "cdcweb-dashboard.json"
SCHEMA = DEPLOY / "grafana" / "dashboard.schema.json"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def promtool() -> str:
    """Return promtool's path, or skip (CI installs Debian's prometheus package: .ci/run)."""
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool not found: apt-get install prometheus (CI's .ci/run does)")
    return found


def exported() -> set[str]:
    """Return every series name /metrics can export."""
    return {f.name + s for f in StreamCollector._families().values() for s in SUFFIXES[f.type]}


def metric_names(expr: str) -> set[str]:
    return set(re.findall(r"\bcdc_[a-z_]+\b", expr))


def rule_exprs() -> list[str]:
    return [rule["expr"] for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def panel_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def test_promtool_accepts_the_alerting_rules():
    done = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 5 rules found" in done.stdout


def test_the_alerting_rules_fire_on_the_series_cdcweb_exports():
    done = subprocess.run(
        [promtool(), "test", "rules", RULES_TEST.name], cwd=RULES_TEST.parent, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboards_queries_are_valid_promql(tmp_path):
    # promtool checks expressions inside rule files, so each panel's query becomes a recording rule
    rules = [
        {"record": f"cdcweb:panel_{i}", "expr": expr.replace("$stream", ".*")}
        for i, expr in enumerate(panel_exprs())
    ]
    path = tmp_path / "panels.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    done = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_matches_its_schema():
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(json.loads(DASHBOARD.read_text()))


def test_panels_have_unique_ids_and_fit_the_24_column_grid():
    panels = json.loads(DASHBOARD.read_text())["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    assert all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in panels)


@pytest.mark.parametrize("source", ["rules", "dashboard"])
def test_rules_and_dashboard_read_only_metrics_cdcweb_exports(source):
    exprs = rule_exprs() if source == "rules" else panel_exprs()
    used = set().union(*(metric_names(expr) for expr in exprs))
    assert used
    assert used <= exported(), used - exported()
