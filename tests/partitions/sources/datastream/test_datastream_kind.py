"""The Datastream kind: its settings, clean() naming every bad one, and connect() on the shared client."""

from __future__ import annotations

import pytest

from partitions.sources.base import SettingsError
from partitions.sources.datastream.client import DATASTREAM_ENDPOINT_ENV, MONITORING_ENDPOINT_ENV
from partitions.sources.datastream.kind import KIND
from partitions.sources.kinds import ReadKind, WatchedKind

GOOD = {"project": "demo-project", "location": "us-central1", "stream_id": "stream-001"}


def test_kind_watches_and_operates_instead_of_reading():
    # given the Datastream kind
    # then cdcweb watches it rather than reading it
    assert (KIND.name, KIND.label) == ("datastream", "Datastream stream")
    assert isinstance(KIND, WatchedKind)
    assert not isinstance(KIND, ReadKind)
    # and its settings are the stream's coordinates plus an editable log retention
    by_name = {s.name: s for s in KIND.settings}
    assert [s.cli for s in KIND.settings[:3]] == ["--project", "--location", "--stream-id"]
    assert all(by_name[n].required and by_name[n].type == "str" for n in ("project", "location", "stream_id"))
    retention = by_name["log_retention_hours"]
    assert (retention.type, retention.default, retention.editable, retention.required) == (
        "int",
        168,
        True,
        False,
    )


def test_clean_strips_types_and_defaults():
    # given settings as a form sends them: strings with stray spaces, no retention
    values = {"project": " demo-project ", "location": "us-central1 ", "stream_id": "stream-001"}
    # when cleaned
    cleaned = KIND.clean(values)
    # then they are stripped and the retention defaults to 7 days
    assert cleaned == {**GOOD, "log_retention_hours": 168}
    assert KIND.clean({**GOOD, "log_retention_hours": "72"})["log_retention_hours"] == 72


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("project", "", "required"),
        ("project", "Demo_Project", "project ID"),
        ("project", "abc", "project ID"),
        ("location", "us central", "region"),
        ("location", "global", "region"),
        ("stream_id", "projects/p/locations/l/streams/s", "not the full name"),
        ("stream_id", "Stream_1", "stream ID"),
        ("stream_id", 42, "stream ID"),
        ("log_retention_hours", 0, "whole number"),
        ("log_retention_hours", "a week", "whole number"),
        ("log_retention_hours", True, "whole number"),
    ],
)
def test_clean_refuses_a_bad_setting_by_name(name, value, says):
    # given one bad setting among good ones
    with pytest.raises(SettingsError) as raised:
        KIND.clean({**GOOD, name: value})
    # then the error names it, and only it
    assert list(raised.value.errors) == [name]
    assert says in raised.value.errors[name]


def test_clean_names_every_bad_and_unknown_setting_at_once():
    with pytest.raises(SettingsError) as raised:
        KIND.clean({"project": "x", "colour": "blue"})
    assert set(raised.value.errors) == {"project", "location", "stream_id", "colour"}
    assert raised.value.errors["colour"] == "unknown setting"


def test_connect_gives_a_handle_on_the_stream_through_the_shared_client(ds_sim, monkeypatch):
    # given the endpoints pointing at the simulator
    monkeypatch.setenv(DATASTREAM_ENDPOINT_ENV, ds_sim.endpoint)
    monkeypatch.setenv(MONITORING_ENDPOINT_ENV, ds_sim.endpoint)
    # when two streams are connected
    first = KIND.connect({**GOOD, "stream_id": "stream-001"})
    second = KIND.connect({**GOOD, "stream_id": "stream-002", "log_retention_hours": "24"})
    # then they share the process's client and each reads its own stream
    assert first.api is second.api
    assert first.get().name == "projects/demo-project/locations/us-central1/streams/stream-001"
    assert second.get().stream_id == "stream-002"
    assert second.log_retention_hours == 24


def test_connect_refuses_bad_settings():
    with pytest.raises(SettingsError):
        KIND.connect({**GOOD, "location": "nowhere"})
