"""A Bigtable stream's partitions on the pages: row ranges printable or in hex, tokens and watermarks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from partitions.models import Partition, PartitionEdge
from partitions.sources.bigtable.cursor import Token, tokens_cursor
from partitions.sources.bigtable.kind import KIND
from partitions.sources.bigtable.ranges import RowRange, label, range_token
from streams.models import Stream
from tests.factories import T0

pytestmark = pytest.mark.django_db
BINARY = RowRange(b"\x00\x01", b"row#8")  # a binary start key, a printable end key


@pytest.fixture
def bigtable_stream():
    connection = {"project": "my-project", "instance": "my-instance", "table": "events", "app_profile": "cdc"}
    return Stream.objects.create(
        name="bt", source_kind="bigtable", connection=KIND.clean(connection), start_at=T0
    )


@pytest.fixture
def merged(bigtable_stream):
    """Return a merged child waiting for its second parent, with the first parent's token handed over."""
    parent = Partition.objects.create(
        stream=bigtable_stream, token=range_token(BINARY), label=label(BINARY), start_at=T0, watermark=T0,
        state=Partition.State.FINISHED,
    )  # fmt: skip
    whole = RowRange(b"", b"")
    child = Partition.objects.create(
        stream=bigtable_stream, token=range_token(whole), label=label(whole), start_at=T0, watermark=T0,
        cursor=tokens_cursor(whole, [Token(BINARY, "tok-from-parent")], T0 + timedelta(seconds=3)),
    )  # fmt: skip
    PartitionEdge.objects.create(stream=bigtable_stream, parent=parent, child=child)
    return child


def test_the_partition_page_shows_tokens_by_row_range_and_the_low_watermark(client, users, merged):
    client.force_login(users["viewer"])
    page = client.get(reverse("partition-detail", args=[merged.pk])).content.decode()
    assert "[-inf, +inf)" in page
    assert "continuation token for [0x0001, row#8)" in page
    assert "tok-from-parent" in page
    assert "low watermark handed over by its parents" in page


def test_the_tree_shows_binary_keys_in_hex_and_printable_ones_as_text(client, users, bigtable_stream, merged):
    client.force_login(users["viewer"])
    page = client.get(reverse("stream-tree", args=[bigtable_stream.pk])).content.decode()
    assert "[0x0001, row#8)" in page
