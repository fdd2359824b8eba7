"""Two beat processes: one schedules, the other waits, and takes over when the first dies."""

from __future__ import annotations

import re
import threading
import time

import pytest

from cdcweb import beat_lock
from tests.partitions.pipeline.conftest import CELERY

HOLDS = "this beat holds the beat lock"
WAITS = "another beat holds the beat lock"


@pytest.mark.slow
def test_only_one_beat_schedules_and_a_standby_takes_over(pipeline, wait_for):
    # given two beats started on one database
    first = pipeline.spawn("beat-a", CELERY, "-A", "cdcweb", "beat", "-l", "INFO", "-s",
                           str(pipeline.var_dir / "beat-a"))  # fmt: skip
    wait_for("the first beat to hold the lock", lambda: HOLDS in pipeline.log_text("beat-a"), timeout=60)
    pipeline.spawn(
        "beat-b", CELERY, "-A", "cdcweb", "beat", "-l", "INFO", "-s", str(pipeline.var_dir / "beat-b")
    )
    wait_for("the second beat to wait", lambda: WAITS in pipeline.log_text("beat-b"), timeout=60)
    # then only the first one sends tasks, also after its lock's watcher checked it a few times
    sent = re.compile(r"Scheduler: Sending due task")
    wait_for("the first beat to send", lambda: sent.search(pipeline.log_text("beat-a")), timeout=30)
    time.sleep(3 * beat_lock.POLL_SECONDS)  # an absence to observe: nothing to poll for
    assert not sent.search(pipeline.log_text("beat-b"))
    assert HOLDS not in pipeline.log_text("beat-b")
    assert "Traceback" not in pipeline.log_text("beat-a")
    # when the first one dies, the standby takes the lock and schedules
    pipeline.kill(first)
    wait_for("the standby to hold the lock", lambda: HOLDS in pipeline.log_text("beat-b"), timeout=30)
    wait_for("the standby to send", lambda: sent.search(pipeline.log_text("beat-b")), timeout=30)


def test_on_sqlite_a_second_holder_waits_on_the_lock_file(tmp_path):
    held = beat_lock._hold_file(tmp_path / "beat.lock", threading.Event())
    assert held is not None
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    assert beat_lock._hold_file(tmp_path / "beat.lock", stop) is None
    held.close()
    assert beat_lock._hold_file(tmp_path / "beat.lock", threading.Event()) is not None
