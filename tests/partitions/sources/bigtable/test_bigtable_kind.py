"""The "bigtable" kind: its settings are checked with clear messages, and it connects as configured."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from bigtable_support import OPTIONS

from partitions.sources.base import SettingsError
from partitions.sources.bigtable.kind import KIND
from partitions.sources.kinds import ReadKind

GOOD = {"project": "my-project", "instance": "my-instance", "table": "events", "app_profile": "cdc"}


def test_the_kind_describes_itself():
    assert (KIND.name, KIND.label, KIND.read_method) == (
        "bigtable",
        "Bigtable change stream",
        "bigtable-change-stream",
    )
    assert isinstance(KIND, ReadKind)
    assert KIND.lineage
    assert [(s.name, s.type, s.required, s.cli) for s in KIND.settings] == [
        ("project", "str", True, "--project"),
        ("instance", "str", True, "--instance"),
        ("table", "str", True, "--table"),
        ("app_profile", "str", True, "--app-profile"),
        ("retention_hours", "int", False, "--retention-hours"),
    ]


def test_good_settings_are_returned_stripped():
    assert KIND.clean({**GOOD, "table": "  events "}) == {**GOOD, "retention_hours": 24}


def test_the_retention_is_one_to_seven_days():
    assert KIND.retention(KIND.clean({**GOOD, "retention_hours": "72"})).total_seconds() == 72 * 3600
    with pytest.raises(SettingsError) as refused:
        KIND.clean({**GOOD, "retention_hours": 200})
    assert refused.value.errors == {"retention_hours": "must be a whole number of hours from 24 to 168"}


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("project", "", "required"),
        ("project", "My_Project", "a project id is 6-30 lowercase letters"),
        ("project", "abc", "a project id is 6-30"),
        ("instance", "inst-", "not ending with a hyphen"),
        ("instance", "1instance", "starting with a letter"),
        ("table", "ev ents", "a table id is 1-50"),
        ("table", "t" * 51, "a table id is 1-50"),
        ("table", ".events", "not starting with '-' or '.'"),
        ("app_profile", "-cdc", "not starting with '-' or '.'"),
        ("app_profile", None, "required"),
        ("app_profile", 7, "expected text"),
    ],
)
def test_bad_settings_are_named_with_the_rule(name, value, says):
    with pytest.raises(SettingsError) as caught:
        KIND.clean({**GOOD, name: value})
    assert list(caught.value.errors) == [name]
    assert says in caught.value.errors[name]


def test_every_bad_setting_is_named_at_once():
    with pytest.raises(SettingsError) as caught:
        KIND.clean({"project": "x", "colour": "blue"})
    assert set(caught.value.errors) == {"project", "instance", "table", "app_profile", "colour"}


def test_connect_reads_the_emulator_named_by_the_environment(bigtable_simulator, monkeypatch):
    # given BIGTABLE_EMULATOR_HOST pointing at the simulator
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", bigtable_simulator.emulator_host)
    # when the kind connects with cleaned settings and the stream starts
    source = KIND.connect(KIND.clean({**GOOD, "app_profile": "default"}))
    roots = source.roots(datetime.now(UTC), None, OPTIONS)
    # then the roots are the simulator's partitions, tiling the table, and reads never wait to start
    assert roots[0].label.startswith("[-inf, ")
    assert roots[-1].label.endswith(", +inf)")
    assert source.next_read_delay(None) == 0
    # and a second connect reuses the process's client
    assert KIND.connect(KIND.clean(GOOD)).client is source.client
