"""A worker's log lines are written by a thread of their own: a thread that logs never waits on a write."""

from __future__ import annotations

import logging
import threading

import pytest

from cdcweb.worker_logging import hand_off, stop


class HeldHandler(logging.Handler):
    """A handler whose first write waits until the test lets it go, as a write stuck behind others."""

    def __init__(self, level=logging.NOTSET):
        super().__init__(level)
        self.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        self.lines: list[str] = []
        self.writing = threading.Event()
        self.go_on = threading.Event()

    def emit(self, record) -> None:
        self.writing.set()
        self.go_on.wait(30)
        self.lines.append(self.format(record))


@pytest.fixture
def logger():
    logger = logging.getLogger("tests.worker_logging")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger
    for handler in list(logger.handlers):
        logger.removeHandler(handler)


def test_a_line_logged_while_a_write_is_stuck_returns_at_once_and_all_are_written_in_order(logger):
    # given a logger whose handler's first write is stuck, behind the queue
    handler = HeldHandler(level=logging.INFO)
    logger.addHandler(handler)
    listener = hand_off(logger)
    logger.info("first %s", "line")
    assert handler.writing.wait(10)
    # when another thread logs while that write is stuck
    logged = threading.Thread(target=lambda: [logger.warning("line %d", n) for n in range(100)])
    logged.start()
    logged.join(10)
    # then it returned without waiting for the write (before, it would wait on the handler's lock)
    assert not logged.is_alive()
    assert handler.lines == []
    # and once the write goes on, every line is written, in order, a handler's own level kept
    logger.debug("below the handler's level")
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("failed")
    handler.go_on.set()
    stop(listener)
    assert handler.lines[:2] == ["INFO first line", "WARNING line 0"]
    assert handler.lines[100] == "WARNING line 99"
    assert handler.lines[101].startswith("ERROR failed\nTraceback")
    assert "ValueError: boom" in handler.lines[101]
    assert len(handler.lines) == 102


def test_handing_off_twice_moves_nothing_more(logger):
    logger.addHandler(HeldHandler())
    listener = hand_off(logger)
    assert hand_off(logger) is None
    assert len(logger.handlers) == 1
    stop(listener)
    stop(listener)  # as atexit does after the worker stopped it
