"""A simulator's server life: a free port, a log of calls, live waits that end when it stops."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import grpc
import pytest

from partitions.simulator.core.clock import now_us
from partitions.simulator.core.server import Aborted, AioGrpcSimulator, GrpcSimulator, SyncSteps


class Bare(GrpcSimulator):
    """A simulator that serves no service: only the lifecycle under test."""

    def __init__(self):
        super().__init__(SimpleNamespace(max_workers=2))

    def register(self, server) -> None:
        pass


class LiveCall:
    """A gRPC context whose client never goes away."""

    def is_active(self) -> bool:
        return True


class Streaming(GrpcSimulator):
    """A simulator whose one method streams until the server stops, as a live change stream read does."""

    def __init__(self):
        super().__init__(SimpleNamespace(max_workers=4))
        self.open = threading.Event()  # set once a call is served

    def register(self, server) -> None:
        def follow(request, context):
            self.open.set()
            yield b"first"
            self.wait_until(now_us() + 3600 * 10**6, context)
            self.end_if_stopping(context)

        methods = {"Follow": grpc.unary_stream_rpc_method_handler(follow)}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("sim.Live", methods),))


class AioStreaming(AioGrpcSimulator):
    """Streaming, served by grpc.aio: the method is a coroutine; a plain one refuses through SyncSteps."""

    def __init__(self):
        super().__init__(SimpleNamespace(max_workers=4))
        self.open = threading.Event()
        self.cancelled = threading.Event()  # set once a call's client went away

    def register(self, server) -> None:
        async def follow(request, context):
            self.open.set()
            yield b"first"
            try:
                await self.wait_until_async(now_us() + 3600 * 10**6)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            await self.end_if_stopping_async(context)

        def refuse(request, context):
            try:
                SyncSteps().abort(grpc.StatusCode.NOT_FOUND, "no such thing")
            except Aborted as refused:
                context.abort(refused.code, refused.details)

        methods = {
            "Follow": grpc.unary_stream_rpc_method_handler(follow),
            "Refuse": grpc.unary_unary_rpc_method_handler(refuse),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("sim.Live", methods),))


def read_and_restart_at_once(channel) -> list[str]:
    """Read a live call until it breaks, then open it again at once (as the official Spanner client does)."""
    follow = channel.unary_stream("/sim.Live/Follow")
    codes = []
    for _ in range(2):
        try:
            for _ in follow(b""):
                pass
            codes.append("OK")
        except grpc.RpcError as error:
            codes.append(error.code().name)
    return codes


@pytest.fixture
def bare():
    simulator = Bare().listen()
    yield simulator
    simulator.stop(grace=0)


def test_a_simulator_listens_on_a_free_port_and_gives_it_back_when_stopped(bare):
    # given a simulator on a free port
    assert bare.port > 0
    assert bare.endpoint == f"127.0.0.1:{bare.port}"
    # then a second one cannot take that port while it serves
    with pytest.raises((OSError, RuntimeError)):
        Bare().listen(port=bare.port)
    # and can once it stopped
    bare.stop(grace=0)
    again = Bare().listen(port=bare.port)
    again.stop(grace=0)


def test_a_live_wait_ends_as_soon_as_the_simulator_stops(bare):
    # given a call waiting for a moment an hour away
    waited = []
    an_hour_away = now_us() + 3600 * 10**6
    waiter = threading.Thread(target=lambda: waited.append(bare.wait_until(an_hour_away, LiveCall())))
    waiter.start()
    # when the simulator stops
    bare.stop(grace=0)
    # then the wait ends within a slice, saying the moment was not reached
    waiter.join(timeout=2)
    assert waited == [False]
    assert bare.wait_until(now_us() - 1, LiveCall()) is True


def test_the_call_log_is_copied_and_filtered(bare):
    entries = [bare.log(SimpleNamespace(method=m)) for m in ("Read", "List", "Read")]
    assert bare.logged() == entries
    assert bare.logged(lambda e: e.method == "Read", since=1) == [entries[2]]
    bare.logged().clear()
    assert len(bare.call_log) == 3


@pytest.mark.parametrize("kind", [Streaming, AioStreaming])
def test_a_stopped_simulator_breaks_its_calls_unavailable_and_refuses_a_restart_the_same_way(kind):
    # given 100 live calls, each on a simulator of its own, whose reader opens it again the moment it breaks
    seen = []
    for _ in range(100):
        simulator = kind().listen()
        with grpc.insecure_channel(simulator.endpoint) as channel:
            grpc.channel_ready_future(channel).result(timeout=10)
            reader = threading.Thread(target=lambda c=channel: seen.append(read_and_restart_at_once(c)))
            reader.start()
            assert simulator.open.wait(timeout=10)
            # when the simulator stops at grace 0
            simulator.stop(grace=0)
            reader.join(timeout=10)
    # then every call broke UNAVAILABLE and every restart was refused UNAVAILABLE: never CANCELLED,
    # which no server going away sends and which a reader takes as permanent (the restart raced the
    # start of gRPC's shutdown in 3 of 100 stops when the calls were told to end first)
    assert seen == [["UNAVAILABLE", "UNAVAILABLE"]] * 100


def test_an_aio_simulator_ends_a_call_its_client_left_at_once_and_refuses_from_plain_code():
    # given a live call on a grpc.aio simulator
    simulator = AioStreaming().listen()
    try:
        with grpc.insecure_channel(simulator.endpoint) as channel:
            call = channel.unary_stream("/sim.Live/Follow")(b"")
            assert next(call) == b"first"
            # when its client cancels it
            call.cancel()
            # then the handler's wait ends without waiting for its hour
            assert simulator.cancelled.wait(timeout=5)
            # and a refusal raised by plain code reaches the client with its code and message
            with pytest.raises(grpc.RpcError) as refused:
                channel.unary_unary("/sim.Live/Refuse")(b"")
            code, details = refused.value.code(), refused.value.details()
            assert (code, details) == (grpc.StatusCode.NOT_FOUND, "no such thing")
    finally:
        simulator.stop(grace=0)
    # and a stopped simulator's waits end at once
    assert asyncio.run(simulator.wait_until_async(now_us() + 3600 * 10**6)) is False
