"""`cdc_stream validate`: one line per check, exit 1 when one fails; release-lease and reread refusals."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from partitions.models import Partition
from streams.models import AuditEntry, Stream
from tests.factories import make_stream

pytestmark = pytest.mark.django_db


def validate(*args: str) -> tuple[list[str], CommandError | None]:
    """Run cdc_stream validate in-process; return its lines and the error it ended with (or None)."""
    out: list[str] = []

    class Sink:
        def write(self, text):
            out.append(text)

        def flush(self):
            pass

    try:
        call_command("cdc_stream", "validate", *args, stdout=Sink())
    except CommandError as error:
        return "".join(out).splitlines(), error
    return "".join(out).splitlines(), None


def connection(simulator, stream: str = "Changes") -> list[str]:
    return [
        "--project", "p", "--instance", "i", "--database", "demo-db", "--change-stream", stream,
        "--emulator-host", simulator.emulator_host,
    ]  # fmt: skip


def test_a_stream_that_would_work_prints_every_check_ok(simulator):
    lines, error = validate("orders", *connection(simulator))
    assert error is None
    assert lines[0] == "ok    database answers: database p/i/demo-db answers; its dialect is googlesql"
    assert len(lines) == 5
    assert all(line.startswith("ok") for line in lines)
    assert not Stream.objects.exists()


def test_a_wrong_stream_name_and_an_old_start_fail_with_exit_status_1(simulator):
    lines, error = validate("orders", *connection(simulator, "Orders"), "--start", "-3h")
    assert error is not None
    assert error.returncode == 1
    assert "FAIL  change stream exists: change stream Orders does not exist (there are: Changes)" in lines
    assert [line.split(":")[0] for line in lines if line.startswith("FAIL")] == [
        "FAIL  change stream exists", "FAIL  start inside retention", "FAIL  change stream query allowed",
    ]  # fmt: skip


def test_a_bad_flag_is_refused_before_the_source_is_asked(simulator):
    lines, error = validate("orders", *connection(simulator, "no;such"))
    assert error is not None
    assert error.returncode == 2
    assert lines == []


def test_partition_actions_refuse_with_status_2_and_act_when_they_apply():
    stream = make_stream("orders", Stream.State.RUNNING, start_at=timezone.now() - timedelta(minutes=10))
    partition = Partition.objects.create(
        stream=stream, token="t", state=Partition.State.RUNNING, start_at=stream.start_at,
        watermark=stream.start_at + timedelta(minutes=5),
    )  # fmt: skip
    with pytest.raises(CommandError, match="no reader holds its lease") as refused:
        call_command("cdc_stream", "release-lease", str(partition.pk))
    assert refused.value.returncode == 2
    with pytest.raises(CommandError, match="no partition with id 999999"):
        call_command("cdc_stream", "release-lease", "999999")
    with pytest.raises(CommandError, match="is after the partition's watermark"):
        call_command("cdc_stream", "reread", str(partition.pk), "--from", "-1m")
    call_command("cdc_stream", "reread", str(partition.pk), "--from", "-9m")
    partition.refresh_from_db()
    assert partition.watermark < stream.start_at + timedelta(minutes=2)
    assert AuditEntry.objects.get().action == "reread"
