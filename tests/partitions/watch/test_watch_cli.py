"""cdc_stream on watched streams: each action followed to its end with its progress printed, a refusal
in one line; recover from a given position, a bad one refused before anything is sent."""

from __future__ import annotations

import io
import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from partitions.watch.importing import import_streams
from partitions.watch.operating import run_operation
from streams.models import StreamOperation
from tests.factories import wait_for
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


def _worker(stream_pk: int, errors: list) -> None:
    """Carry out the stream's operation once the CLI has sent it, as the Celery worker would."""
    try:
        pending = wait_for(
            "the CLI to send the operation",
            lambda: StreamOperation.objects.filter(stream_id=stream_pk, status="PENDING").first(),
            timeout=30,
        )
        run_operation(pending)
    except BaseException as error:  # noqa: BLE001 - shown by the test that started the thread
        errors.append(error)
    finally:
        connection.close()


def _run_with_worker(stream, *command) -> tuple[str, BaseException | None]:
    """Run cdc_stream while a thread carries out the operation; return its output and any error."""
    errors: list = []
    worker = threading.Thread(target=_worker, args=(stream.pk, errors))
    worker.start()
    out, refused = io.StringIO(), None
    try:
        call_command("cdc_stream", *command, stdout=out)
    except CommandError as error:
        refused = error
    worker.join(timeout=60)
    assert not errors, errors
    return out.getvalue(), refused


@pytest.mark.django_db(transaction=True)
def test_the_cli_follows_a_pause_to_its_end_printing_its_progress(at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    out, refused = _run_with_worker(stream, "pause", stream.name)
    assert refused is None, refused
    lines = out.splitlines()
    assert (
        lines[0]
        == f"stream '{stream.name}': pause sent to the source (operation {stream.operations.get().pk})"
    )
    assert any(line.startswith("  RUNNING: ") for line in lines), out  # Datastream's progress messages
    assert any(line.startswith("  DONE: ") for line in lines), out
    assert lines[-1].startswith(f"stream '{stream.name}': PAUSED (done in ")


@pytest.mark.django_db(transaction=True)
def test_the_cli_says_a_refusal_in_datastreams_words_in_one_line(at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("PAUSED")).created[0]
    out, refused = _run_with_worker(stream, "pause", stream.name)
    assert refused is not None, out
    assert "the source refused it (FAILED_PRECONDITION)" in str(refused)
    assert "already paused" in str(refused)
    assert "\n" not in str(refused)


def test_no_wait_returns_once_the_operation_is_sent(at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    out = io.StringIO()
    call_command("cdc_stream", "pause", stream.name, "--no-wait", stdout=out)
    assert out.getvalue().strip().endswith(f"(operation {stream.operations.get().pk})")
    assert stream.operations.get().status == "PENDING"


def test_an_operation_no_worker_takes_is_given_up_after_wait(at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    with pytest.raises(CommandError, match="is still PENDING after 0.2 s; it goes on") as gave_up:
        call_command("cdc_stream", "pause", stream.name, "--wait", "0.2", stdout=io.StringIO())
    assert gave_up.value.returncode == 1
