"""The life of a simulator's gRPC server: a thread pool on a free port, a call log, live waits, a clean stop.

Each simulator subclasses ``GrpcSimulator``, registers its services in ``register`` and
logs its calls with ``log``; ``start_server`` of each package is ``Simulator(config).listen``.
A request the real service would refuse is raised as ``Refusal`` and answered with its status.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any, Self

import grpc

from .clock import now_us

_WAIT_SLICE_S = 0.2  # how late a cancelled live call notices it is gone
BREAK_CALLS_S = 0.5  # what a stop gives open calls to end UNAVAILABLE before gRPC cancels them


class Refusal(Exception):
    """A request the real service would refuse: the gRPC status code and the service's message."""

    def __init__(self, code: grpc.StatusCode, message: str):
        self.code, self.message = code, message
        super().__init__(f"{code.name}: {message}")


class GrpcSimulator:
    """A simulator's gRPC server: its config, where it listens, the log of its calls, and its stop."""

    threads = "simulator"  # the prefix of the worker threads' names
    stop_grace = 1.0  # seconds open calls get to end when the server stops

    def __init__(self, config):
        """Keep the resolved config (its ``max_workers`` sizes the pool); nothing listens until ``listen``."""
        self.config = config
        self.call_log: list[Any] = []
        self.host, self.port = "", 0
        self._log_lock = threading.Lock()
        self._stopping = threading.Event()
        self._grpc: grpc.Server | None = None

    @property
    def endpoint(self) -> str:
        """Return host:port, where a client connects."""
        return f"{self.host}:{self.port}"

    def register(self, server: grpc.Server) -> None:
        """Add this simulator's services to the server."""
        raise NotImplementedError

    def listen(self, host: str = "127.0.0.1", port: int = 0) -> Self:
        """Serve on host:port (0 picks a free port) in background threads; return self."""
        workers = self.config.max_workers
        pool = futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=self.threads)
        server = grpc.server(pool, options=[("grpc.so_reuseport", 0)])
        self.register(server)
        bound = server.add_insecure_port(f"{host}:{port}")
        if not bound:
            raise OSError(f"cannot listen on {host}:{port}")
        server.start()
        self._grpc, self.host, self.port = server, host, bound
        return self

    def stop(self, grace: float | None = None) -> None:
        """Stop serving: open streams end UNAVAILABLE, then the port is released.

        Even at grace 0, the open calls get a moment (BREAK_CALLS_S) to end UNAVAILABLE, as
        a server that goes away breaks them, before gRPC cancels what is left: a client sees
        CANCELLED then, and a test of an outage would read a retryable error where the
        client should have resumed the query.
        gRPC's shutdown begins before the open calls are told to end: a client restarts a
        broken query at once, and a call that reached the server as its shutdown began was
        cancelled (3 in 100 stops when the calls were told first; none in 300 this way).
        """
        if self._grpc is None:
            self._stopping.set()
            return
        grace = self.stop_grace if grace is None else grace
        stopped = self._grpc.stop(max(grace, BREAK_CALLS_S))
        self._stopping.set()
        stopped.wait()

    def wait_until(self, ts_us: int, context) -> bool:
        """Sleep until the wall clock reaches ts_us; False if the call or the server ended first."""
        while True:
            remaining = (ts_us - now_us()) / 1e6
            if remaining <= 0:
                return True
            if self._stopping.wait(min(remaining, _WAIT_SLICE_S)) or not context.is_active():
                return False

    @property
    def stopping(self) -> bool:
        """Return whether the server is stopping (or stopped)."""
        return self._stopping.is_set()

    def end_if_stopping(self, context) -> None:
        """End the call UNAVAILABLE if the server stops: a server that goes away breaks its calls.

        Returning would end the call OK, as if it had reached its end: a change stream reader
        would take a window as read in full, and the official client would not resume it.
        """
        if self.stopping:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the server is shutting down, resume the call")

    def log(self, entry):
        """Append a call to the log and return it."""
        with self._log_lock:
            self.call_log.append(entry)
        return entry

    def logged(self, keep: Callable[[Any], bool] | None = None, since: int = 0) -> list:
        """Return a copy of the log from index ``since`` on, only the calls ``keep`` accepts (None: all)."""
        with self._log_lock:
            return [entry for entry in self.call_log[since:] if keep is None or keep(entry)]
