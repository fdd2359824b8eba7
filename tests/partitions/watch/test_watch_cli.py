"""cdc_stream on watched streams: recover from a given position; a bad one refused in one line."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from partitions.watch.importing import import_streams
from tests.factories.datastream import LOCATION, PROJECT

pytestmark = pytest.mark.django_db


def _failed(at_sim):
    failed = at_sim.steady_streams("FAILED_PERMANENTLY", 60.0)[0].rsplit("/", 1)[-1]
    return import_streams(PROJECT, LOCATION, failed).created[0]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--strategy", "position", "--position", "oracle:abc"), "an Oracle position is oracle:SCN"),
        (("--strategy", "position"), "strategy 'position' needs a position"),
        (("--strategy", "timestamp", "--timestamp", "-1h"), "not from a timestamp"),
    ],
)
def test_a_bad_recovery_is_refused_in_one_line(at_sim, flags, says):
    stream = _failed(at_sim)
    with pytest.raises(CommandError, match=says) as refused:
        call_command("cdc_stream", "recover", stream.name, *flags)
    assert "\n" not in str(refused.value)
    assert not stream.operations.exists()
