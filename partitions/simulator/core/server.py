"""The life of a simulator's gRPC server: a thread pool on a free port, a call log, live waits, a clean stop.

Each simulator subclasses ``GrpcSimulator``, registers its services in ``register`` and
logs its calls with ``log``; ``start_server`` of each package is ``Simulator(config).listen``.
A request the real service would refuse is raised as ``Refusal`` and answered with its status.
A simulator whose streams stay open by the thousand subclasses ``AioGrpcSimulator`` instead:
its streaming handlers are coroutines on one event loop, its unary ones run in the pool.
"""

from __future__ import annotations

import asyncio
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


class AioGrpcSimulator(GrpcSimulator):
    """A simulator served by grpc.aio on an event loop of its own: open streams cost no thread.

    The thread-per-call server held one thread per open stream, each waking every
    _WAIT_SLICE_S to see whether its call or the server had ended: at 2,000 live partitions,
    2,000 threads and 10,000 wake-ups a second behind one interpreter lock, and every message
    passed through gRPC's one serving thread (docs/benchmarks.md, issue 22: new queries waited
    seconds for their first message). Here a streaming handler is an async generator that
    awaits ``wait_until_async``; a cancelled call ends at once (CancelledError). Handlers that
    are plain functions (unary calls) run in a pool of ``max_workers`` threads, as before.
    """

    def __init__(self, config):
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Future | None = None  # done once the server stops: wakes every wait
        self._pool: futures.ThreadPoolExecutor | None = None  # runs the plain (unary) handlers

    def listen(self, host: str = "127.0.0.1", port: int = 0) -> Self:
        """Serve on host:port (0 picks a free port) on an event loop in a background thread; return self."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=f"{self.threads}-loop", daemon=True)
        thread.start()
        try:
            server, bound = asyncio.run_coroutine_threadsafe(self._start(host, port), loop).result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        self._loop, self._thread = loop, thread
        self._grpc, self.host, self.port = server, host, bound
        return self

    async def _start(self, host: str, port: int):
        workers = self.config.max_workers
        self._pool = pool = futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=self.threads)
        server = grpc.aio.server(migration_thread_pool=pool, options=[("grpc.so_reuseport", 0)])
        self.register(server)
        try:
            bound = server.add_insecure_port(f"{host}:{port}")
        except RuntimeError as error:  # grpc.aio raises where the sync server returns 0
            raise OSError(f"cannot listen on {host}:{port}: {error}") from None
        if not bound:
            raise OSError(f"cannot listen on {host}:{port}")
        self._stopped = asyncio.get_running_loop().create_future()
        await server.start()
        return server, bound

    def stop(self, grace: float | None = None) -> None:
        """Stop serving as GrpcSimulator.stop does (open streams end UNAVAILABLE), then end the loop."""
        if self._grpc is None or self._loop is None:
            self._stopping.set()
            return
        grace = self.stop_grace if grace is None else grace
        loop = self._loop
        asyncio.run_coroutine_threadsafe(self._shut_down(max(grace, BREAK_CALLS_S)), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join()
        # What gRPC left on the loop (a unary call's task finishing in the pool) ends here.
        loop.run_until_complete(_cancel_all())
        loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._grpc = self._loop = None

    async def _shut_down(self, grace: float) -> None:
        # gRPC's shutdown begins first (its first step refuses new calls), then the open calls
        # are told to end: GrpcSimulator.stop says why.
        stopping = asyncio.ensure_future(self._grpc.stop(grace))
        await asyncio.sleep(0)
        self._stopping.set()
        if self._stopped is not None and not self._stopped.done():
            self._stopped.set_result(None)
        await stopping

    async def wait_until_async(self, ts_us: int) -> bool:
        """Wait until the wall clock reaches ts_us; False if the server stops first.

        A call the client cancels ends at once: grpc.aio cancels its handler's task.
        """
        while True:
            remaining = (ts_us - now_us()) / 1e6
            if remaining <= 0:
                return True
            if self.stopping:
                return False
            await asyncio.wait((self._stopped,), timeout=remaining)

    async def end_if_stopping_async(self, context) -> None:
        """End the call UNAVAILABLE if the server stops (end_if_stopping, for a coroutine's context)."""
        if self.stopping:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the server is shutting down, resume the call")


async def _cancel_all() -> None:
    """Cancel every other task of the running loop and wait for them, then close its async generators."""
    left = asyncio.all_tasks() - {asyncio.current_task()}
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


class Aborted(Exception):
    """Raised by ``SyncSteps.abort``: a refusal from plain code run inside a coroutine handler."""

    def __init__(self, code: grpc.StatusCode, details: str):
        self.code, self.details = code, details
        super().__init__(f"{code.name}: {details}")


class SyncSteps:
    """The context plain (non-async) code gets inside a coroutine handler: ``abort`` raises ``Aborted``.

    grpc.aio's ``context.abort`` is a coroutine; plain code shared with the unary handlers
    calls ``context.abort(code, details)`` and expects it to raise. The handler catches
    ``Aborted`` and awaits the real abort with it.
    """

    def abort(self, code: grpc.StatusCode, details: str):
        raise Aborted(code, details)
