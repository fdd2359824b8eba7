"""The embedded broker's transport (cdcweb/broker.py): each message once, in order, without a listing each."""

from __future__ import annotations

import os
import threading
import time

import pytest
from kombu import Connection, Exchange, Queue
from kombu.transport import virtual

from cdcweb import broker


@pytest.fixture(autouse=True)
def _fresh_broker_state(monkeypatch):
    """Give each test kombu's in-process record of declared queues afresh (per class, not per folder)."""
    monkeypatch.setattr(broker.Transport, "global_state", virtual.BrokerState())


def _connection(folder) -> Connection:
    queue, processed = folder / "queue", folder / "processed"
    for path in (queue, processed, folder / "control"):
        path.mkdir(exist_ok=True)
    options = {
        "data_folder_in": str(queue),
        "data_folder_out": str(queue),
        "processed_folder": str(processed),
    }
    options |= {"control_folder": str(folder / "control"), "polling_interval": 0.01}
    return Connection("filesystem://", transport="cdcweb.broker:Transport", transport_options=options)


def _take(connection: Connection, queue: str, count: int) -> list[int]:
    taken = []
    with connection.SimpleQueue(queue) as simple:
        for _ in range(count):
            message = simple.get(timeout=5)
            taken.append(message.payload["n"])
            message.ack()
    return taken


def _next_millisecond() -> None:
    """Return once the clock has moved on a millisecond (a message's name orders it to the millisecond)."""
    now = round(time.monotonic() * 1000)  # as the name has it
    while round(time.monotonic() * 1000) <= now:
        pass


def test_messages_come_out_of_each_queue_in_the_order_they_went_in(tmp_path):
    # given messages put into two queues, interleaved, each in a millisecond of its own
    with _connection(tmp_path) as connection:
        with connection.SimpleQueue("celery") as celery, connection.SimpleQueue("urgent") as urgent:
            for n in range(40):
                (urgent if n % 4 == 0 else celery).put({"n": n})
                _next_millisecond()
        # then each queue gives back its own, oldest first
        assert _take(connection, "urgent", 10) == list(range(0, 40, 4))
        assert _take(connection, "celery", 30) == [n for n in range(40) if n % 4]


def _put(folder, queue: str, *numbers: int) -> None:
    """Put messages as another process would (a connection of their own, never consumed from)."""
    with _connection(folder) as producer, producer.SimpleQueue(queue) as simple:
        for n in numbers:
            simple.put({"n": n})


def test_a_message_put_after_the_folder_was_listed_is_delivered(tmp_path):
    # given a consumer that has listed the folder and taken everything in it
    _put(tmp_path, "celery", 1)
    with _connection(tmp_path) as consumer, consumer.SimpleQueue("celery") as inbox:
        first = inbox.get(timeout=5)
        first.ack()
        # when another message arrives
        _put(tmp_path, "celery", 2)
        # then it is taken too (the queue is listed again once found empty)
        second = inbox.get(timeout=5)
        second.ack()
    assert [first.payload["n"], second.payload["n"]] == [1, 2]


def test_two_consumers_take_every_message_exactly_once(tmp_path):
    # given 600 messages and two consumers (two worker processes' channels) on one folder
    with _connection(tmp_path) as connection, connection.SimpleQueue("celery") as simple:
        for n in range(600):
            simple.put({"n": n})
    taken: list[list[int]] = [[], []]

    def consume(mine: list[int]) -> None:
        with _connection(tmp_path) as connection, connection.SimpleQueue("celery") as simple:
            while True:
                try:
                    message = simple.get(timeout=1)
                except simple.Empty:
                    return
                mine.append(message.payload["n"])
                message.ack()

    threads = [threading.Thread(target=consume, args=(mine,)) for mine in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    # then each message was taken once, by one of them, and both took some
    assert sorted(taken[0] + taken[1]) == list(range(600))
    assert taken[0]
    assert taken[1]


def test_a_backlog_is_taken_without_listing_the_folder_for_every_message(tmp_path, monkeypatch):
    # given 2,000 queued messages (2,000 partitions started at once)
    with _connection(tmp_path) as connection, connection.SimpleQueue("celery") as simple:
        for n in range(2_000):
            simple.put({"n": n})
    listings = []
    real_listdir = os.listdir
    monkeypatch.setattr(broker.os, "listdir", lambda path: listings.append(path) or real_listdir(path))
    # when a consumer takes them all
    with _connection(tmp_path) as connection:
        assert sorted(_take(connection, "celery", 2_000)) == list(range(2_000))
    # then it listed the folder a few times, not once (stock kombu: twice) per message
    assert len(listings) < 20


@pytest.mark.parametrize("name", [".tmp-0123abcd", "1_x.celery.msg.part", "notes.txt"])
def test_files_that_are_not_messages_are_left_alone(tmp_path, name):
    # given a stray file next to a message (a temporary name being written, anything else)
    with _connection(tmp_path) as connection:
        (tmp_path / "queue" / name).write_text("not a message")
        with connection.SimpleQueue("celery") as simple:
            simple.put({"n": 7})
        # then the message is taken and the stray file stays where it is
        assert _take(connection, "celery", 1) == [7]
    assert (tmp_path / "queue" / name).exists()


def test_an_urgent_message_is_not_held_behind_a_backlog(tmp_path):
    # given a worker of two queues taking a backlog of 2,000 reads from one of them
    _put(tmp_path, "celery", *range(2_000))
    taken: list[tuple[str, int]] = []
    queues = [Queue(name, Exchange(name), routing_key=name) for name in ("urgent", "celery")]
    with _connection(tmp_path) as worker:

        def take(body, message):
            taken.append((message.delivery_info["routing_key"], body["n"]))
            message.ack()
            busy = time.monotonic() + 0.003  # a task's hand-over: 2,000 of them take 6 s and more
            while time.monotonic() < busy:
                pass

        with worker.Consumer(queues, callbacks=[take]):
            while len(taken) < 10:
                worker.drain_events(timeout=5)
            # when an urgent message arrives (a child partition's first read)
            _put(tmp_path, "urgent", -1)
            sent = time.monotonic()
            while ("urgent", -1) not in taken:
                worker.drain_events(timeout=5)
            # then it is taken within about a second, before the backlog is done
            assert time.monotonic() - sent < broker.LIST_EVERY_BUSY + 1.0
            assert len(taken) < 2_000


def test_an_exchange_table_still_empty_reads_as_empty_and_takes_a_binding(tmp_path):
    # given an exchange's table file that another process has created but not yet filled
    with _connection(tmp_path) as connection:
        channel = connection.default_channel
        (tmp_path / "control" / "jobs.exchange").write_bytes(b"")
        # then it reads as an empty table, and a queue binds to it
        assert channel.get_table("jobs") == []
        channel._queue_bind("jobs", "a", None, "a")
        channel._queue_bind("jobs", "b", None, "b")
        channel._queue_bind("jobs", "a", None, "a")
        assert sorted(row.queue for row in channel.get_table("jobs")) == ["a", "b"]


def _bind_in_a_process(folder: str, queue: str, together) -> None:
    from pathlib import Path

    connection = _connection(Path(folder))
    binding = Queue(queue, Exchange("together", type="direct"), routing_key=queue)
    together.wait(timeout=60)  # all processes bind in the same instant
    with connection:
        binding(connection.default_channel).declare()


def test_workers_declaring_one_exchange_at_once_all_bind(tmp_path):
    # given eight processes that declare their queue on a new exchange in the same instant
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    together = context.Barrier(8)
    workers = [
        context.Process(target=_bind_in_a_process, args=(str(tmp_path), f"q{i}", together)) for i in range(8)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    # then none of them failed, and the exchange's table holds every queue
    assert [worker.exitcode for worker in workers] == [0] * 8
    with _connection(tmp_path) as connection:
        table = connection.default_channel.get_table("together")
    assert sorted(row.queue for row in table) == [f"q{i}" for i in range(8)]
