"""Polling cycles: what each costs in RPCs, and errors reported once across cycles."""

from __future__ import annotations

import pytest

from partitions.sources.datastream.poll import Poller

PARENT = "projects/demo-project/locations/us-central1"


def _names(count: int) -> list[str]:
    return [f"{PARENT}/streams/stream-{i:03d}" for i in range(count)]


def test_a_cycle_over_a_location_costs_one_list_call(ds_sim, api):
    # given 200 watched streams of one location
    poller, mark = Poller(api), ds_sim.mark()
    # when one cycle runs
    cycle = poller.poll(_names(200))
    # then one ListStreams gave every stream's state and errors
    assert cycle.rpcs == 1
    assert [r.method for r in ds_sim.requests(since=mark)] == ["ListStreams"]
    assert all(p.stream is not None and p.failure is None for p in cycle.streams.values())
    assert cycle.streams[f"{PARENT}/streams/stream-007"].stream.stream_id == "stream-007"


def test_a_few_streams_cost_one_get_each(ds_sim, api):
    poller, mark = Poller(api, list_threshold=10), ds_sim.mark()
    cycle = poller.poll(_names(5))
    assert cycle.rpcs == 5
    assert sorted(r.target for r in ds_sim.requests("GetStream", since=mark)) == _names(5)


def test_objects_are_read_on_a_slower_staggered_cadence(ds_sim, api):
    # given objects read every fourth cycle
    poller, names = Poller(api, objects_every=4), _names(200)
    read: dict[str, int] = {}
    # when four cycles run
    for _ in range(4):
        mark = ds_sim.mark()
        cycle = poller.poll(names)
        # then each cycle reads a quarter of the streams' objects, besides its one list call
        assert cycle.rpcs == 1 + 50
        assert len(ds_sim.requests("ListStreamObjects", since=mark)) == 50
        for name, polled in cycle.streams.items():
            read[name] = read.get(name, 0) + (polled.objects is not None)
    # and after four every stream's objects were read exactly once
    assert set(read.values()) == {1}


def test_metrics_add_four_calls_for_every_stream(ds_sim, api):
    api.metric_types("demo-project")  # the descriptors are listed once an hour, not each cycle
    poller, mark = Poller(api, metrics_every=1, metrics_window=60.0), ds_sim.mark()
    cycle = poller.poll(_names(200))
    assert cycle.rpcs == 5
    assert [r.method for r in ds_sim.requests(since=mark)] == ["ListStreams"] + ["ListTimeSeries"] * 4
    running = [p for p in cycle.streams.values() if p.stream.state == "RUNNING" and p.metrics is not None]
    assert len(running) > 50


def test_errors_are_reported_once_across_polls_and_cleared_when_gone(travel):
    # given a poller over every stream of a simulator whose clock moves a minute a cycle
    server, api = travel
    poller, names = Poller(api, objects_every=3), [s for s in server.world.streams]
    reported: list[str] = []
    cleared: list[str] = []
    # when it polls through more than a whole cycle of the scripts
    for _ in range(int(server.config.cycle / 60) + 6):
        cycle = poller.poll(names)
        for polled in cycle.streams.values():
            reported.extend(e.key for e in polled.new_errors)
            cleared.extend(polled.cleared_errors)
        server.clock.advance(60.0)
    # then errors appeared, each reported once only, and those that ended were cleared once
    assert len(reported) > len(names)
    assert len(reported) == len(set(reported))
    assert cleared
    assert len(cleared) == len(set(cleared))
    assert set(cleared) <= set(reported)


def test_a_missing_stream_fails_alone(ds_sim, api):
    names = [*_names(3), f"{PARENT}/streams/deleted-stream"]
    cycle = Poller(api).poll(names)
    assert cycle.streams[names[-1]].stream is None
    assert cycle.streams[names[-1]].failure.code == "NOT_FOUND"
    assert all(cycle.streams[n].stream is not None for n in names[:3])


def test_a_name_that_is_not_a_stream_is_refused(api):
    with pytest.raises(ValueError, match="not a Datastream stream name"):
        Poller(api).poll(["stream-001"])
