"""cdc_stream takes values as its help prints them, and refuses a heartbeat the lease cannot hold."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from streams.models import Stream

pytestmark = pytest.mark.django_db
TABLE = [
    "--kind", "spanner_commit_timestamp", "--project", "p", "--instance", "i", "--database", "d",
    "--table", "ShardedEvents", "--timestamp-column", "LastModified", "--key-columns", "TenantId,EventId",
    "--shard-column", "ShardId", "--index", "ShardedEventsByShardLastModified",
]  # fmt: skip
CHANGES = ["--project", "p", "--instance", "i", "--database", "d", "--change-stream", "Orders"]


@pytest.mark.parametrize("shards", [["--shards", "-18-18"], ["--shards=-18-18"]])
def test_shards_as_the_help_prints_them(shards):
    # when a table is registered with the shard range the help and the DDL advisor print
    call_command("cdc_stream", "create", "events", *TABLE, *shards)
    # then every shard value from -18 to 18 is a partition to watch
    assert Stream.objects.get(name="events").connection["shards"] == list(range(-18, 19))


def test_a_heartbeat_the_lease_cannot_hold_three_times_is_refused_with_the_numbers():
    with pytest.raises(CommandError) as refused:
        call_command("cdc_stream", "create", "orders", *CHANGES, "--heartbeat-ms", "300000")
    assert refused.value.returncode == 2
    assert "300,000 ms does not fit 3 times in the 60 s lease (CDC_LEASE_SECONDS)" in str(refused.value)
    assert not Stream.objects.exists()
