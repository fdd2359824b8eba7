"""The Datastream simulator through the official client: determinism, paging, operations, refusals."""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.cloud import datastream_v1 as ds
from google.protobuf import field_mask_pb2

from partitions.simulator.datastream.config import DatastreamSimConfig
from partitions.simulator.datastream.server import start_server
from partitions.simulator.datastream.timeline import SEGMENTS

PARENT = "projects/demo-project/locations/us-central1"


def _pause_request(name: str, paths=("state",)) -> ds.UpdateStreamRequest:
    return ds.UpdateStreamRequest(
        stream=ds.Stream(name=name, state=ds.Stream.State.PAUSED),
        update_mask=field_mask_pb2.FieldMask(paths=list(paths)),
    )


def _running(sim) -> str:
    return next(iter(sim.steady_streams("RUNNING", 30.0)))


def test_same_seed_and_epoch_serve_the_same_streams(sim, datastream):
    # given a second simulator with the same seed and epoch, and a third with another seed
    twin = start_server(sim.config)
    other = start_server(DatastreamSimConfig(**{**sim.config.__dict__, "seed": 4}))
    try:
        # when each is listed at the same instant
        at = sim.clock.now()
        mine = [(s.name, s.display_name, s.source, s.moment(at)) for s in sim.world.streams.values()]
        theirs = [(s.name, s.display_name, s.source, s.moment(at)) for s in twin.world.streams.values()]
        others = [(s.name, s.display_name, s.source, s.moment(at)) for s in other.world.streams.values()]
    finally:
        twin.stop()
        other.stop()
    # then the twin matches in every stream, state and error; the other seed does not
    assert mine == theirs
    assert mine != others
    listed = [s.name for s in datastream.list_streams(parent=PARENT)]
    assert listed == [name for name, *_ in mine]


def test_each_stream_script_passes_through_every_state(sim):
    states = {state for state, _, _ in SEGMENTS} | {"NOT_STARTED"}
    assert states == {s.name for s in ds.Stream.State} - {"STATE_UNSPECIFIED"}
    for stream in sim.world.streams.values():
        timeline = stream.timeline
        seen = {
            timeline.at(t + 0.1).state
            for t in timeline.segment_starts(timeline.start_at, timeline.start_at + timeline.length)
        }
        assert seen == states - {"NOT_STARTED"}


def test_an_error_keeps_its_uuid_while_it_lasts(sim):
    # given a stream's FAILED -> FAILED_PERMANENTLY stretch
    timeline = next(iter(sim.world.streams.values())).timeline
    failed, permanent = (timeline.start_at + timeline.offsets[i] + 1 for i in (10, 11))
    # then the error opened when it failed is the same one after it failed for good, plus one more
    first, later = timeline.at(failed).errors, timeline.at(permanent).errors
    assert [e.uuid for e in first] == [later[0].uuid]
    assert len(later) == 2
    # and the next cycle's episode is another error
    again = timeline.at(failed + timeline.length).errors
    assert again[0].uuid != first[0].uuid
    assert again[0].reason == first[0].reason


def test_pages_follow_the_page_size(sim, datastream):
    mark = sim.mark()
    pager = datastream.list_streams(request=ds.ListStreamsRequest(parent=PARENT, page_size=7))
    assert len(list(pager)) == 20
    assert len(sim.requests("ListStreams", since=mark)) == 3


def test_pause_takes_its_operation_time_then_pauses(sim, datastream):
    # given a running stream
    name = _running(sim)
    # when it is paused, the operation first runs and the stream drains
    op = datastream.update_stream(request=_pause_request(name))
    assert op.done() is False
    assert op.metadata.verb == "update"
    assert op.metadata.target == name
    assert datastream.get_stream(name=name).state == ds.Stream.State.DRAINING
    # then once its time has passed it is done, and the stream paused
    sim.clock.advance(sim.config.operation_seconds)
    assert op.result(timeout=5).state == ds.Stream.State.PAUSED
    assert op.metadata.end_time is not None
    assert datastream.get_stream(name=name).state == ds.Stream.State.PAUSED
    assert [r.method for r in sim.requests("GetOperation")]


def test_refusals_are_grpc_errors_with_datastream_messages_in_the_log(sim, datastream):
    name = f"{PARENT}/streams/stream-000"  # not started yet
    with pytest.raises(exceptions.FailedPrecondition, match="hasn't been started"):
        datastream.update_stream(request=_pause_request(name))
    with pytest.raises(exceptions.InvalidArgument, match="update_mask"):
        datastream.update_stream(request=_pause_request(name, paths=("display_name",)))
    with pytest.raises(exceptions.NotFound, match="was not found"):
        datastream.get_stream(name=f"{PARENT}/streams/missing")
    assert [r.code for r in sim.requests()] == ["FAILED_PRECONDITION", "INVALID_ARGUMENT", "NOT_FOUND"]


def test_objects_can_be_looked_up_by_their_source_identifier(sim, datastream):
    stream = sim.world.streams[f"{PARENT}/streams/stream-001"]
    obj = stream.objects[0]
    field = {
        "mysql": "mysql_identifier",
        "oracle": "oracle_identifier",
        "postgresql": "postgresql_identifier",
    }.get(stream.source, "sql_server_identifier")
    container = "database" if stream.source == "mysql" else "schema"
    identifier = ds.SourceObjectIdentifier(**{field: {container: obj.container, "table": obj.table}})
    found = datastream.lookup_stream_object(
        request=ds.LookupStreamObjectRequest(parent=stream.name, source_object_identifier=identifier)
    )
    assert found.name == obj.name


def test_operations_are_listed_and_cannot_be_cancelled(sim, datastream):
    op = datastream.update_stream(request=_pause_request(_running(sim)))
    listed = datastream.list_operations(request={"name": PARENT})
    assert [o.name for o in listed.operations] == [op.operation.name]
    with pytest.raises(exceptions.MethodNotImplemented):
        datastream.cancel_operation(request={"name": op.operation.name})
