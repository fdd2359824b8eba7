"""Strong read-only transactions: begun by BeginTransaction or inline, each with a read timestamp.

A multi-use snapshot of the official client begins its transaction inline with its
first query (``TransactionSelector.begin``) and names it by id afterwards; an explicit
``snapshot.begin()`` calls BeginTransaction instead. Either way the server picks the
read timestamp (now, for a strong read) and returns it with the transaction, because
the client asks for it (``return_read_timestamp``). Every later query of the
transaction reads at that timestamp.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict

import grpc

from .sql import QueryError

# Transactions are never closed by a read-only client; the oldest are forgotten beyond
# this many (a poller uses each for one poll, so only a very old one can be missing).
_KEEP = 100_000


def now_us() -> int:
    """Return the wall clock in microseconds since 1970: the read timestamp of a strong read."""
    return time.time_ns() // 1000


class ReadOnlyTransactions:
    """The read timestamps of begun transactions, by id."""

    def __init__(self) -> None:
        self._reads: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def begin(self, options) -> tuple[bytes, int]:
        """Begin a transaction for TransactionOptions (raw protobuf); return (id, read timestamp us)."""
        check_strong_read_only(options)
        txn_id = uuid.uuid4().bytes
        read_us = now_us()
        with self._lock:
            self._reads[txn_id] = read_us
            while len(self._reads) > _KEEP:
                self._reads.popitem(last=False)
        return txn_id, read_us

    def read_timestamp(self, selector) -> tuple[int, bytes | None]:
        """Return (read timestamp us, id of a transaction begun now or None) for a TransactionSelector."""
        kind = selector.WhichOneof("selector")
        if kind == "begin":
            txn_id, read_us = self.begin(selector.begin)
            return read_us, txn_id
        if kind == "id":
            with self._lock:
                read_us = self._reads.get(selector.id)
            if read_us is None:
                raise QueryError(grpc.StatusCode.NOT_FOUND, "Transaction not found")
            return read_us, None
        if kind == "single_use":
            check_strong_read_only(selector.single_use)
        return now_us(), None  # no selector: a single-use strong read, as Spanner defaults


def check_strong_read_only(options) -> None:
    """Raise QueryError unless the options ask for a strong read-only transaction."""
    if options.WhichOneof("mode") != "read_only":
        raise QueryError(grpc.StatusCode.INVALID_ARGUMENT, "the simulator serves read-only transactions only")
    if options.read_only.WhichOneof("timestamp_bound") not in (None, "strong"):
        raise QueryError(grpc.StatusCode.INVALID_ARGUMENT, "the simulator serves strong reads only")
