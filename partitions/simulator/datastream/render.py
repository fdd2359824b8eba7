"""Turn simulated streams, objects and operations into the v1 API's messages at an instant."""

from __future__ import annotations

from datetime import UTC, datetime

from google.cloud import datastream_v1 as ds
from google.longrunning import operations_pb2
from google.protobuf import any_pb2
from google.rpc import status_pb2

from .catalog import SimError
from .world import SimObject, SimStream

_SOURCE_CONFIGS = {
    "mysql": {"mysql_source_config": ds.MysqlSourceConfig()},
    "oracle": {"oracle_source_config": ds.OracleSourceConfig()},
    "postgresql": {
        "postgresql_source_config": ds.PostgresqlSourceConfig(
            replication_slot="datastream_slot", publication="datastream_publication"
        )
    },
    "sql_server": {"sql_server_source_config": ds.SqlServerSourceConfig()},
}
_IDENTIFIERS = {
    "mysql": lambda o: {"mysql_identifier": {"database": o.container, "table": o.table}},
    "oracle": lambda o: {"oracle_identifier": {"schema": o.container, "table": o.table}},
    "postgresql": lambda o: {"postgresql_identifier": {"schema": o.container, "table": o.table}},
    "sql_server": lambda o: {"sql_server_identifier": {"schema": o.container, "table": o.table}},
}


def ts(seconds: float | None) -> datetime | None:
    """Return an aware UTC datetime for unix seconds (None stays None)."""
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def error_pb(error: SimError) -> ds.Error:
    """Return the v1 Error of a simulated one."""
    return ds.Error(
        reason=error.reason,
        error_uuid=error.uuid,
        message=error.message,
        error_time=ts(error.time),
        details=error.details,
    )


def stream_pb(stream: SimStream, t: float) -> ds.Stream:
    """Return the v1 Stream as the API shows it at unix time t."""
    moment = stream.moment(t)
    profiles = stream.name.split("/streams/")[0] + "/connectionProfiles"
    source = ds.SourceConfig(
        source_connection_profile=f"{profiles}/{stream.source.replace('_', '')}-source",
        **_SOURCE_CONFIGS[stream.source],
    )
    destination = ds.DestinationConfig(destination_connection_profile=f"{profiles}/{stream.destination}-dest")
    if stream.destination == "gcs":
        destination.gcs_destination_config = ds.GcsDestinationConfig(path=f"/{stream.stream_id}")
    else:
        destination.bigquery_destination_config = ds.BigQueryDestinationConfig()
    result = ds.Stream(
        name=stream.name,
        display_name=stream.display_name,
        create_time=ts(stream.timeline.created_at),
        update_time=ts(moment.since),
        state=ds.Stream.State[moment.state],
        source_config=source,
        destination_config=destination,
        errors=[error_pb(e) for e in moment.errors],
        last_recovery_time=ts(moment.recovered_at),
        labels={"app": stream.display_name.split("-")[0]},
    )
    if stream.backfill_all:
        result.backfill_all = ds.Stream.BackfillAllStrategy()
    else:
        result.backfill_none = ds.Stream.BackfillNoneStrategy()
    return result


def object_pb(stream: SimStream, obj: SimObject, t: float) -> ds.StreamObject:
    """Return the v1 StreamObject with its latest backfill job at unix time t."""
    job = obj.job(t)
    backfill = ds.BackfillJob(
        state=ds.BackfillJob.State[job.state],
        trigger=ds.BackfillJob.Trigger[job.trigger],
        last_start_time=ts(job.start),
        last_end_time=ts(job.end),
        errors=[error_pb(e) for e in job.errors],
    )
    return ds.StreamObject(
        name=obj.name,
        display_name=obj.display_name,
        create_time=ts(stream.timeline.created_at),
        update_time=ts(max(stream.timeline.created_at, obj.track[-1][0] if obj.track else obj.pending_at)),
        errors=[error_pb(e) for e in job.errors],
        backfill_job=backfill,
        source_object=ds.SourceObjectIdentifier(**_IDENTIFIERS[stream.source](obj)),
    )


def operation_pb(op, now: float, response: ds.Stream | None) -> operations_pb2.Operation:
    """Return the google.longrunning Operation of a simulated one as it stands at ``now``."""
    outcome = op.outcome
    done = now >= outcome.done_at
    message = "Done" if done else [text for at, text in outcome.stages if at <= now][-1]
    if done and outcome.error is not None:
        message = outcome.error.message
    metadata = ds.OperationMetadata(
        create_time=ts(op.created),
        end_time=ts(outcome.done_at) if done else None,
        target=op.target,
        verb=outcome.verb,
        status_message=message,
        api_version="v1",
    )
    result = operations_pb2.Operation(name=op.name, done=done)
    result.metadata.CopyFrom(_pack(ds.OperationMetadata.pb(metadata)))
    if done and outcome.error is not None:
        result.error.CopyFrom(
            status_pb2.Status(code=outcome.error.code.value[0], message=outcome.error.message)
        )
    elif done and response is not None:
        result.response.CopyFrom(_pack(ds.Stream.pb(response)))
    return result


def _pack(message) -> any_pb2.Any:
    """Return a message packed into an Any."""
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed
