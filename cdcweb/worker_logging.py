"""A worker's log lines are written by a thread of their own: no thread waits on another's write.

A logging handler writes under its lock. In a reader worker some sixty threads log (the
Celery pool's reads, the live loop, its helpers, the consumer): the one holding the lock
writes, then waits for the interpreter lock to finish, and every other thread that logs
waits behind it. Profiled at 2,000 live partitions, the live loop (every live read of the
process) spent a fifth of its time waiting there (docs/benchmarks.md, issue 22). Here the
worker's loggers hand each record to a queue (the standard library's QueueHandler, which
formats it first) and one QueueListener thread writes them, in order, to the handlers
Celery set up. Lines still in the queue when the process is killed are lost with it: a few
milliseconds' worth.
"""

from __future__ import annotations

import atexit
import logging
import queue
from logging.handlers import QueueHandler, QueueListener


def hand_off(logger: logging.Logger) -> QueueListener | None:
    """Move the logger's handlers behind a queue and a writing thread; return that thread's listener.

    None if the logger has no handler of its own to move (or they were moved already).
    """
    handlers = [h for h in logger.handlers if not isinstance(h, QueueHandler)]
    if not handlers:
        return None
    records: queue.SimpleQueue = queue.SimpleQueue()
    listener = QueueListener(records, *handlers, respect_handler_level=True)
    for handler in handlers:
        logger.removeHandler(handler)
    logger.addHandler(QueueHandler(records))
    listener.start()
    atexit.register(stop, listener)  # writes what is queued before the process exits
    return listener


def stop(listener: QueueListener) -> None:
    """Write what is queued and end the listener's thread (once: a second stop does nothing)."""
    if listener._thread is not None:  # QueueListener.stop of Python 3.11 fails on a stopped one
        listener.stop()
