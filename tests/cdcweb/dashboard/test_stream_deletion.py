"""Deleting a stream that has read: only stopped, saying what becomes of its data (API, admin, CLI).

Landed files are kept by the stream's id: a new stream given a deleted stream's name
never reads what the deleted one landed, whether its files were kept or purged.
"""

from __future__ import annotations

import io
import os
from datetime import UTC, datetime

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from rest_framework.test import APIClient

from cdcweb.reports.command import build_command
from cdcweb.reports.models import Report
from partitions.models import Partition
from partitions.pipeline import landing
from partitions.sources.landing import legacy_stream_dir, stream_dir
from partitions.sources.spanner_change_stream.landing import build_table
from streams.models import Stream
from streams.roles import ensure_roles
from tests.factories.api import token_for
from tests.partitions.pipeline.test_landing import make_record

S = Stream.State
T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


@pytest.fixture
def zone(settings, tmp_path):
    """Return the landing zone's root, the settings pointing there."""
    settings.CDC_LANDING_URI = str(tmp_path / "landing")
    settings.CDC_REPORTS_DIR = tmp_path / "reports"
    return tmp_path / "landing"


def land(stream: Stream, token: str = "tok-A", mods: int = 2) -> str:
    """Land a window of the stream as the pipeline does; return the file."""
    table = build_table(stream.name, token, [make_record(mods=mods)], T0)
    return landing.write_table(django_settings.CDC_LANDING_URI, stream.pk, token, T0, table)


def started(make_stream, make_partition, name: str = "orders", state: str = S.PAUSED) -> Stream:
    """Return a stream that has read (a partition, a landed window) and is now in `state`."""
    stream = make_stream(name, state=state)
    make_partition(stream, data_records=1)
    land(stream)
    return stream


# --- the API ------------------------------------------------------------------------------
@pytest.mark.parametrize("state", [S.RUNNING, S.STARTING, S.DRAINING, S.FAILED])
def test_a_stream_that_reads_is_not_deleted_409_naming_its_state(
    operator, zone, make_stream, make_partition, state
):
    stream = started(make_stream, make_partition, state=state)
    answer = operator.delete(f"/api/v1/streams/{stream.pk}/?data=purge")
    assert answer.status_code == 409
    assert answer.json()["current_state"] == state
    assert "stop it first" in answer.json()["detail"]
    assert Stream.objects.filter(pk=stream.pk).exists()
    assert landing.read_landing(str(zone), stream.pk).num_rows == 2


@pytest.mark.parametrize("data", ["", "maybe"])
def test_a_stopped_stream_needs_a_word_on_its_data_400(operator, zone, make_stream, make_partition, data):
    stream = started(make_stream, make_partition)
    answer = operator.delete(f"/api/v1/streams/{stream.pk}/?data={data}")
    assert answer.status_code == 400
    assert "data=keep" in answer.json()["data"][0]
    assert Stream.objects.filter(pk=stream.pk).exists()


def test_purge_deletes_its_files_and_its_rows(operator, zone, make_stream, make_partition):
    stream = started(make_stream, make_partition, state=S.FAILED_PERMANENTLY)
    report_dir = zone.parent / "reports" / "1"
    report_dir.mkdir(parents=True)
    Report.objects.create(stream=stream, since=T0, until=T0.replace(hour=13), requested_by="t",
                          output_dir=str(report_dir))  # fmt: skip
    other = started(make_stream, make_partition, name="payments")
    # when the stream is deleted, purging its data
    assert operator.delete(f"/api/v1/streams/{stream.pk}/?data=purge").status_code == 204
    # then its files, rows and report outputs are gone, and another stream's are not
    assert not (zone / stream_dir(stream.pk)).exists()
    assert not Partition.objects.filter(stream_id=stream.pk).exists()
    assert not Report.objects.exists()
    assert not report_dir.exists()
    assert landing.read_landing(str(zone), other.pk).num_rows == 2


def test_keep_leaves_its_files_where_no_new_stream_of_its_name_reads_them(
    operator, zone, make_stream, make_partition
):
    stream = started(make_stream, make_partition)
    assert operator.delete(f"/api/v1/streams/{stream.pk}/?data=keep").status_code == 204
    # then the files stay under the deleted stream's id
    assert landing.read_landing(str(zone), stream.pk).num_rows == 2
    # and a new stream of the same name reads none of them, in its reports either
    created = operator.post("/api/v1/streams/", {"name": "orders", "project": "p", "instance": "i",
                            "database": "d", "change_stream": "Orders"}, format="json")  # fmt: skip
    assert created.status_code == 201, created.content
    newcomer = Stream.objects.get(name="orders")
    assert newcomer.pk != stream.pk
    assert landing.read_landing(str(zone), newcomer.pk).num_rows == 0
    report = Report(stream=newcomer, since=T0, until=T0.replace(hour=13), pk=1)
    argv = build_command(report, zone.parent / "out", zone.parent / "lineage.json")
    assert argv[argv.index("--stream-id") + 1] == str(newcomer.pk)
    assert "--legacy-name" not in argv


def test_a_stream_that_never_read_is_deleted_without_a_word(operator, zone, make_stream):
    stream = make_stream("draft")
    assert operator.delete(f"/api/v1/streams/{stream.pk}/").status_code == 204
    assert not Stream.objects.filter(pk=stream.pk).exists()


def test_a_viewer_cannot_delete(client_as_viewer, zone, make_stream):
    stream = make_stream("draft")
    assert client_as_viewer.delete(f"/api/v1/streams/{stream.pk}/?data=purge").status_code == 403


@pytest.fixture
def client_as_viewer(db) -> APIClient:
    ensure_roles(apps)  # a transactional test's flush may have emptied the migration's groups
    user = User.objects.create_user("vera", password="pw")
    user.groups.add(Group.objects.get(name="viewers"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return client


def test_renaming_a_started_stream_keeps_its_landed_data(operator, zone, make_stream, make_partition):
    stream = started(make_stream, make_partition, state=S.RUNNING)
    answer = operator.patch(f"/api/v1/streams/{stream.pk}/", {"name": "orders-eu"}, format="json")
    assert answer.status_code == 200, answer.content
    land(Stream.objects.get(pk=stream.pk), token="tok-B", mods=3)
    assert landing.read_landing(str(zone), stream.pk).num_rows == 5


# --- streams that landed before ids: stream=<name>/ -------------------------------------
def legacy(zone, stream: Stream, name: str) -> None:
    """Put a window under stream=<name>/ as cdcweb landed it before ids, and record it."""
    path = land(stream, token="tok-before-ids")
    target = zone / legacy_stream_dir(name) / path.split(f"{stream_dir(stream.pk)}/", 1)[1]
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, target)
    Stream.objects.filter(pk=stream.pk).update(landing_name=name)


def test_old_files_stay_readable_and_purge_takes_them_too(operator, zone, make_stream, make_partition):
    stream = started(make_stream, make_partition)
    legacy(zone, stream, "orders")
    stream.refresh_from_db()
    assert landing.read_landing(str(zone), stream.pk, stream.landing_name).num_rows == 4
    assert operator.delete(f"/api/v1/streams/{stream.pk}/?data=purge").status_code == 204
    assert not (zone / legacy_stream_dir("orders")).exists()
    assert not (zone / stream_dir(stream.pk)).exists()


def test_cdc_landing_adopt_moves_old_files_under_the_id(zone, make_stream, make_partition):
    stream = started(make_stream, make_partition)
    legacy(zone, stream, "orders")
    call_command("cdc_landing", "adopt", stdout=io.StringIO())
    stream.refresh_from_db()
    assert stream.landing_name == ""
    assert not (zone / legacy_stream_dir("orders")).exists()
    assert landing.read_landing(str(zone), stream.pk).num_rows == 4


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_existing_streams_their_old_directory(make_stream):
    executor = MigrationExecutor(connection)
    executor.migrate([("streams", "0010_retention_per_stream")])
    old = executor.loader.project_state([("streams", "0010_retention_per_stream")]).apps
    before = old.get_model("streams", "Stream").objects.create(name="orders", start_at=T0, connection={})
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
        assert Stream.objects.get(pk=before.pk).landing_name == "orders"
        assert make_stream("later").landing_name == ""
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


# --- the CLI and the admin -------------------------------------------------------------------
def test_cdc_stream_delete_refuses_then_deletes(zone, make_stream, make_partition):
    stream = started(make_stream, make_partition, state=S.RUNNING)
    with pytest.raises(CommandError, match="stop it first") as refused:
        call_command("cdc_stream", "delete", "orders", "--data", "purge")
    assert refused.value.returncode == 2
    Stream.objects.filter(pk=stream.pk).update(state=S.PAUSED)
    with pytest.raises(CommandError, match="data=keep"):
        call_command("cdc_stream", "delete", "orders")
    call_command("cdc_stream", "delete", "orders", "--data", "purge", stdout=io.StringIO())
    assert not Stream.objects.exists()
    assert not (zone / stream_dir(stream.pk)).exists()


def test_the_admin_asks_what_becomes_of_the_data(admin_client, zone, make_stream, make_partition):
    stream = started(make_stream, make_partition, state=S.RUNNING)
    url = reverse("admin:streams_stream_delete", args=[stream.pk])
    # a running stream: the page says why not, and a post changes nothing
    assert "stop it first" in admin_client.get(url).content.decode()
    admin_client.post(url, {"post": "yes", "data": "purge"})
    assert Stream.objects.filter(pk=stream.pk).exists()
    # stopped: the page asks, a post without an answer is refused, with one it deletes
    Stream.objects.filter(pk=stream.pk).update(state=S.PAUSED)
    page = admin_client.get(url).content.decode()
    assert 'name="data" value="keep"' in page
    assert 'name="data" value="purge"' in page
    refused = admin_client.post(url, {"post": "yes"}, follow=True)
    assert any("data=keep" in str(m) for m in refused.context["messages"])
    assert Stream.objects.filter(pk=stream.pk).exists()
    admin_client.post(url, {"post": "yes", "data": "keep"})
    assert not Stream.objects.filter(pk=stream.pk).exists()
    assert landing.read_landing(str(zone), stream.pk).num_rows == 2


def test_the_admin_offers_no_bulk_delete(admin_client, make_stream):
    make_stream()
    page = admin_client.get(reverse("admin:streams_stream_changelist")).content.decode()
    assert 'value="delete_selected"' not in page
