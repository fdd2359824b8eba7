"""The stream page says what the source is, what its kind cannot see, and how to avoid hotspots."""

from __future__ import annotations

import pytest

from tests.factories import make_stream

pytestmark = pytest.mark.django_db
TABLE = {
    "project": "p", "instance": "i", "database": "d", "dialect": "googlesql", "table": "Orders",
    "timestamp_column": "LastModified", "key_columns": ["LastModified", "OrderId"], "shard_column": "",
    "shards": [], "index": "", "emulator_host": "",
}  # fmt: skip


def test_a_commit_timestamp_stream_page_says_deletes_are_invisible_and_advises_ddl(admin_client):
    # given a table watched by commit timestamp, whose key starts with the commit timestamp
    stream = make_stream("orders", source_kind="spanner_commit_timestamp", connection=TABLE)
    # when its page is shown
    page = admin_client.get(f"/streams/{stream.pk}/").content.decode()
    # then it says plainly that deletes are invisible, and there are no splits or merges
    assert "Deletes are invisible to this method" in page
    assert "no splits or merges" in page
    # and it gives the shard column and null-filtered index statements, and the hotspot warning
    assert "ADD COLUMN `ShardId` INT64 AS (MOD(FARM_FINGERPRINT(" in page
    assert "CREATE NULL_FILTERED INDEX `OrdersByShardIdLastModified`" in page
    assert "primary key starts with the commit timestamp LastModified" in page


def test_a_change_stream_page_has_no_polling_advice(admin_client):
    stream = make_stream("changes")
    page = admin_client.get(f"/streams/{stream.pk}/").content.decode()
    assert "p/i/d: change stream Orders" in page
    assert "null-filtered index" not in page
    assert "no splits or merges" not in page
