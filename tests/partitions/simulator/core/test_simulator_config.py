"""The settings every change-stream simulator shares: checks, epoch, faults and their command-line forms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from partitions.simulator.bigtable import config as bigtable
from partitions.simulator.core.clock import to_us
from partitions.simulator.core.config import Fault, parse_duration, parse_timestamp
from partitions.simulator.spanner import config as spanner

CONFIGS = [spanner.SimulatorConfig, bigtable.BigtableSimulatorConfig]


@pytest.mark.parametrize("config_type", CONFIGS)
@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("roots", 0, "roots must be at least 1"),
        ("split_every", 0.0, "split_every and merge_every must be positive"),
        ("tps", -1.0, "tps must not be negative"),
        ("epoch", datetime(2024, 5, 1), "epoch must be timezone-aware"),  # noqa: DTZ001 - the mistake tested
    ],
)
def test_both_simulators_refuse_the_same_bad_shared_setting(config_type, field, value, says):
    with pytest.raises(ValueError, match=says):
        config_type(**{field: value})


def test_each_simulator_keeps_its_own_retention_range():
    # Spanner takes any positive retention; Bigtable keeps 60 s to 7 days
    assert spanner.SimulatorConfig(retention=30.0).retention == 30.0
    with pytest.raises(ValueError, match="retention must be positive"):
        spanner.SimulatorConfig(retention=0.0)
    with pytest.raises(ValueError, match="retention must be between 60 s and 7 days"):
        bigtable.BigtableSimulatorConfig(retention=30.0)


@pytest.mark.parametrize("config_type", CONFIGS)
def test_an_unset_epoch_resolves_to_now_minus_retention_floored_to_the_minute(config_type):
    now = datetime(2024, 5, 1, 9, 30, 42, 123, tzinfo=UTC)
    resolved = config_type(retention=3600.0).resolved(now)
    assert type(resolved) is config_type
    assert resolved.epoch == datetime(2024, 5, 1, 8, 30, tzinfo=UTC)
    assert resolved.resolved(now + timedelta(hours=1)) is resolved


@pytest.mark.parametrize("config_type", CONFIGS)
def test_the_topology_starts_at_the_epoch_and_needs_one(config_type):
    epoch = datetime(2024, 5, 1, 9, tzinfo=UTC)
    with pytest.raises(ValueError, match="epoch must be set"):
        config_type().topology()
    topology = config_type(roots=3, epoch=epoch).topology(seed=11)
    assert (topology.seed, topology.epoch_us, len(topology.live_at(to_us(epoch)))) == (11, to_us(epoch), 3)


def test_faults_of_one_kind_add_up():
    config = spanner.SimulatorConfig(faults=(Fault("slow", 5.0), Fault("slow", 7.0), Fault("internal", 0.1)))
    assert (config.fault("slow"), config.fault("internal"), config.fault("unavailable")) == (12.0, 0.1, 0)


def test_each_simulator_takes_only_the_fault_kinds_it_can_inject():
    assert spanner.parse_fault("internal:0.5") == Fault("internal", 0.5)
    assert bigtable.parse_fault("Slow:250") == Fault("slow", 250.0)
    with pytest.raises(ValueError, match="kinds are unavailable, slow"):
        bigtable.parse_fault("internal:0.5")
    with pytest.raises(ValueError, match="a probability in"):
        spanner.parse_fault("unavailable:1.5")
    with pytest.raises(ValueError, match="give a number"):
        spanner.parse_fault("slow:fast")


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("1500ms", 1.5), ("15m", 900.0), ("1d", 86400.0)]
)
def test_durations_take_a_unit_or_mean_seconds(text, seconds):
    assert parse_duration(text) == seconds


def test_timestamps_are_utc_and_a_bad_one_says_how_to_write_it():
    assert parse_timestamp("2024-05-01T11:00:00+02:00") == datetime(2024, 5, 1, 9, tzinfo=UTC)
    assert parse_timestamp("2024-05-01T09:00:00") == datetime(2024, 5, 1, 9, tzinfo=UTC)
    with pytest.raises(ValueError, match="use ISO 8601"):
        parse_timestamp("yesterday")
    with pytest.raises(ValueError, match="use e.g. 90s"):
        parse_duration("a while")
