"""kombu's filesystem transport with atomic message writes.

Stock kombu (5.7) creates a message file under its final name and then writes it; a
consumer in another process can move and read it in between, get an empty payload and
stop the whole worker ("Unrecoverable error: JSONDecodeError"), losing the message.
Measured here: it killed a test worker within a few hundred cross-process enqueues.
This transport writes to a hidden temporary name and renames it into place, so a
consumer only ever sees complete messages. cdcweb/settings.py selects it
(CELERY_BROKER_TRANSPORT) whenever the broker URL is filesystem://.

Stock kombu also lists and sorts the whole folder for every message it takes, twice for a
worker of two queues: with thousands of reads queued (2,000 partitions starting at once),
a reader took five to ten a second, their reservations lapsed while they waited, and the
orphan sweep queued them again (docs/benchmarks.md, issue 22). Here one listing is kept per
consumer and taken from in order; the folder is listed again once a queue's share is spent
(at most every LIST_EVERY seconds, or LIST_EVERY_BUSY while another queue's is not). A name
another consumer took first is skipped, as stock kombu skips it.

Stock kombu also creates an exchange's table file empty and fills it after taking its lock:
a worker starting at the same moment could lock it first, read nothing and stop on the
JSONDecodeError (seen when a width benchmark started its workers together). Here the file is
never truncated to be filled, and a table read while still empty is an empty table.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections import deque
from queue import Empty
from time import monotonic

from kombu.transport import filesystem
from kombu.transport.filesystem import LOCK_EX, LOCK_SH, exchange_queue_t, lock, unlock
from kombu.utils.json import dumps, loads

# A queue found empty is looked at again after this long (the polling interval's order)...
LIST_EVERY = 0.05
# ...or after this long while another queue still has messages listed: a listing of thousands
# of names, under a busy process's interpreter lock, took 50 ms and more, and one per message
# (for a worker's other, empty queue) took most of the consumer's time.
LIST_EVERY_BUSY = 1.0


class Channel(filesystem.Channel):
    """A filesystem channel whose messages appear complete or not at all, taken from one listing."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._listed: dict[str, deque[str]] = {}
        self._listed_at = float("-inf")

    def _get(self, queue):
        """Return the oldest message of `queue` (raise Empty if none), listing the folder only when needed."""
        names = self._listed.get(queue)
        every = LIST_EVERY_BUSY if any(self._listed.values()) else LIST_EVERY
        if not names and monotonic() - self._listed_at >= every:
            self._list()
            names = self._listed.get(queue)
        while names:
            payload = self._take(names.popleft())
            if payload is not None:
                return payload
        raise Empty()

    def _list(self) -> None:
        listed: dict[str, deque[str]] = {}
        for name in sorted(os.listdir(self.data_folder_in)):  # oldest first: names start with the time
            if name.endswith(".msg"):
                listed.setdefault(name.partition(".")[2][: -len(".msg")], deque()).append(name)
        self._listed, self._listed_at = listed, monotonic()

    def _take(self, name: str):
        """Move the message out of the queue and return it; None if another consumer took it first."""
        folder = self.processed_folder if self.store_processed else tempfile.gettempdir()
        try:
            shutil.move(os.path.join(self.data_folder_in, name), folder)
        except OSError:
            return None
        moved = os.path.join(folder, name)
        try:
            with open(moved, "rb") as handle:
                payload = handle.read()
            if not self.store_processed:
                os.remove(moved)
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot read file {moved!r} from queue.") from exc
        return loads(payload.decode())

    def _put(self, queue, payload, **kwargs):
        """Write the message to a temporary file, then rename it into the queue."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # Other names in the folder are ignored by _get: it only takes '<id>.<queue>.msg'.
        tmp = os.path.join(self.data_folder_out, f".tmp-{uuid.uuid4().hex}")
        try:
            with open(tmp, "wb") as handle:
                handle.write(dumps(payload).encode())
            os.replace(tmp, final)
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        """Add the queue to the exchange's table, under its lock; create the table if missing."""
        file = self._exchange_file(exchange)
        self.control_folder.mkdir(exist_ok=True)
        entry = exchange_queue_t(routing_key or "", pattern or "", queue or "")
        try:
            handle = os.fdopen(os.open(file, os.O_RDWR | os.O_CREAT, 0o644), "rb+", buffering=0)
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot open {file}") from exc
        with handle:
            lock(handle, LOCK_EX)
            try:
                queues = _table(handle.read())
                if entry not in queues:
                    queues.insert(0, entry)
                    handle.seek(0)
                    handle.truncate()
                    handle.write(dumps(queues).encode())
            finally:
                unlock(handle)

    def get_table(self, exchange):
        """Return the exchange's table (empty while another process is still creating it)."""
        file = self._exchange_file(exchange)
        try:
            with open(file, "rb") as handle:
                lock(handle, LOCK_SH)
                try:
                    return _table(handle.read())
                finally:
                    unlock(handle)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot open {file}") from exc


def _table(raw: bytes) -> list:
    return [exchange_queue_t(*row) for row in loads(raw.decode())] if raw.strip() else []


class Transport(filesystem.Transport):
    """The filesystem transport, with atomic writes."""

    Channel = Channel
