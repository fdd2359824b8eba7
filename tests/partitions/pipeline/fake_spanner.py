"""An independent Spanner change-stream fake, written apart from partitions/simulator.

It shares no code with the simulator (only the official client's proto-plus types), so
a reader bug that the simulator happens to hide shows up here. Its topology is fixed:
every partition lives `life` seconds; partitions of even generations split in two,
the two siblings of an odd generation merge back into one, and both parents of a merge
end at the same timestamp and both report the child. Each partition commits `rate`
single-row transactions a second. Rows are PostgreSQL-dialect JSON. With
`record_per_child`, a split announces each child in a record of its own (the seed's
initial-query example does that: two records for three tokens, one start timestamp).

    fake = FakeSpanner(epoch, life=20.0, rate=2.0, families=2).start()
    ... SPANNER_EMULATOR_HOST = fake.emulator_host, database "fake-pg" ...
    fake.stop()
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from concurrent import futures
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import grpc
from google.cloud.spanner_v1.types import result_set, spanner
from google.cloud.spanner_v1.types import type as spanner_type
from google.protobuf import empty_pb2, struct_pb2

DATABASE = "fake-pg"


def _ts(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class FakePartition:
    """One partition of the fixed topology: family, generation and index within it."""

    family: int
    generation: int
    index: int  # 0 or 1 in odd generations (two siblings), always 0 in even ones

    @property
    def token(self) -> str:
        return f"fake-{self.family}-{self.generation}-{self.index}"

    def parents(self) -> list[FakePartition]:
        g = self.generation
        if g == 0:
            return []
        if g % 2:  # odd: born of a split of the single partition before it
            return [FakePartition(self.family, g - 1, 0)]
        return [FakePartition(self.family, g - 1, 0), FakePartition(self.family, g - 1, 1)]

    def children(self) -> list[FakePartition]:
        g = self.generation
        if g % 2 == 0:
            return [FakePartition(self.family, g + 1, 0), FakePartition(self.family, g + 1, 1)]
        return [FakePartition(self.family, g + 1, 0)]

    @staticmethod
    def parse(token: str) -> FakePartition | None:
        try:
            _, family, generation, index = token.split("-")
            return FakePartition(int(family), int(generation), int(index))
        except ValueError:
            return None


@dataclass
class FakeQuery:
    """One query as the fake received it, for tests that check what readers asked."""

    token: str | None
    start: datetime
    end: datetime | None
    opened: float = field(default_factory=time.monotonic)
    closed: float | None = None


class FakeSpanner:
    """The fake's model and its gRPC server."""

    def __init__(
        self,
        epoch: datetime,
        life: float = 20.0,
        rate: float = 2.0,
        families: int = 1,
        record_per_child=False,
    ):
        self.epoch, self.life, self.rate, self.families = epoch, life, rate, families
        self.record_per_child = record_per_child
        self.queries: list[FakeQuery] = []
        self._lock = threading.Lock()
        self._server: grpc.Server | None = None
        self.port = 0

    @property
    def emulator_host(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- the model ---------------------------------------------------------------------

    def bounds(self, part: FakePartition) -> tuple[datetime, datetime]:
        start = self.epoch + timedelta(seconds=self.life * part.generation)
        return start, start + timedelta(seconds=self.life)

    def commits(self, part: FakePartition) -> list[datetime]:
        """Return the commit timestamps of the partition's transactions, oldest first."""
        start, _ = self.bounds(part)
        step = 1.0 / self.rate
        count = int(self.life * self.rate)
        # Half a step in, so no commit falls on a partition boundary.
        return [start + timedelta(seconds=step * (i + 0.5)) for i in range(count)]

    def ground_truth(self, start: datetime, end: datetime) -> set[tuple[str, datetime]]:
        """Return (token, commit timestamp) of every record a reader of [start, end] must land."""
        found = set()
        generation = 0
        while self.epoch + timedelta(seconds=self.life * generation) <= end:
            for family in range(self.families):
                for index in range(2 if generation % 2 else 1):
                    part = FakePartition(family, generation, index)
                    found |= {(part.token, c) for c in self.commits(part) if start <= c <= end}
            generation += 1
        return found

    def live_at(self, moment: datetime) -> list[FakePartition]:
        generation = int((moment - self.epoch).total_seconds() // self.life)
        count = 2 if generation % 2 else 1
        return [FakePartition(f, generation, i) for f in range(self.families) for i in range(count)]

    def _data(self, part: FakePartition, commit: datetime, seq: int) -> dict:
        return {
            "data_change_record": {
                "commit_timestamp": _ts(commit),
                "record_sequence": "00000000",
                "server_transaction_id": f"{part.token}-{seq}",
                "is_last_record_in_transaction_in_partition": True,
                "table_name": "Orders",
                "column_types": [
                    {"name": "id", "type": {"code": "INT64"}, "is_primary_key": True, "ordinal_position": 1},
                    {
                        "name": "note",
                        "type": {"code": "STRING"},
                        "is_primary_key": False,
                        "ordinal_position": 2,
                    },
                ],
                "mods": [{"keys": {"id": str(seq)}, "new_values": {"note": "x"}, "old_values": {}}],
                "mod_type": "INSERT",
                "value_capture_type": "OLD_AND_NEW_VALUES",
                "number_of_records_in_transaction": 1,
                "number_of_partitions_in_transaction": 1,
                "transaction_tag": "",
                "is_system_transaction": False,
            }
        }

    def records(self, part: FakePartition, start: datetime, end: datetime | None, heartbeat_ms: int):
        """Yield (timestamp, record) of a partition query in order; a child record ends it."""
        p_start, p_end = self.bounds(part)
        beat = timedelta(milliseconds=heartbeat_ms)
        last = max(start, p_start)
        for seq, commit in enumerate(self.commits(part)):
            if commit < start:
                continue
            if end is not None and commit > end:
                break
            while commit - last > beat:
                last += beat
                yield last, {"heartbeat_record": {"timestamp": _ts(last)}}
            last = commit
            yield commit, self._data(part, commit, seq)
        limit = p_end if end is None else min(p_end, end)
        while limit - last > beat:
            last += beat
            yield last, {"heartbeat_record": {"timestamp": _ts(last)}}
        if end is None or p_end <= end:
            children = [
                {"token": c.token, "parent_partition_tokens": [p.token for p in c.parents()]}
                for c in part.children()
            ]
            groups = [[c] for c in children] if self.record_per_child else [children]
            for seq, group in enumerate(groups):
                body = {
                    "start_timestamp": _ts(p_end),
                    "record_sequence": f"{seq:08d}",
                    "child_partitions": group,
                }
                yield p_end, {"child_partitions_record": body}

    def initial(self, start: datetime):
        children = [{"token": p.token, "parent_partition_tokens": [None]} for p in self.live_at(start)]
        body = {"start_timestamp": _ts(start), "record_sequence": "00000000", "child_partitions": children}
        yield start, {"child_partitions_record": body}

    # -- the server --------------------------------------------------------------------

    def _session(self, database: str) -> spanner.Session:
        return spanner.Session(name=f"{database}/sessions/{uuid.uuid4().hex}", multiplexed=True)

    def create_session(self, request, context):
        return self._session(request.database)

    def batch_create_sessions(self, request, context):
        sessions = [self._session(request.database) for _ in range(request.session_count)]
        return spanner.BatchCreateSessionsResponse(session=sessions)

    def delete_session(self, request, context):
        return empty_pb2.Empty()

    def execute_streaming_sql(self, request, context):
        fields = request.params.fields
        start = datetime.fromisoformat(fields["p1"].string_value.replace("Z", "+00:00"))
        end_value = fields["p2"]
        end = None if end_value.WhichOneof("kind") == "null_value" else end_value.string_value
        end = datetime.fromisoformat(end.replace("Z", "+00:00")) if end else None
        token_value = fields["p3"]
        token = None if token_value.WhichOneof("kind") in (None, "null_value") else token_value.string_value
        heartbeat_ms = int(fields["p4"].string_value or fields["p4"].number_value)
        query = FakeQuery(token, start, end)
        with self._lock:
            self.queries.append(query)
        try:
            if token is None:
                items = self.initial(start)
            else:
                part = FakePartition.parse(token)
                if part is None or start < self.bounds(part)[0]:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid partition token: {token}")
                items = self.records(part, start, end, heartbeat_ms)
            skip = int(request.resume_token.decode() or 0) if request.resume_token else 0
            yield from self._stream(items, skip, end, context)
        finally:
            query.closed = time.monotonic()

    def _stream(self, items, skip: int, end: datetime | None, context):
        partial = result_set.PartialResultSet.pb()  # raw protobuf: Values stay Values
        json_type = spanner_type.Type(
            code=spanner_type.TypeCode.JSON, type_annotation=spanner_type.TypeAnnotationCode.PG_JSONB
        )
        row_type = spanner_type.StructType(fields=[spanner_type.StructType.Field(name="x", type_=json_type)])
        metadata = result_set.ResultSetMetadata.pb(result_set.ResultSetMetadata(row_type=row_type))
        sent, first, ended_by_child = 0, True, False
        for moment, record in items:
            sent += 1
            if sent <= skip:
                continue
            if not self._wait(moment, context):
                return
            value = struct_pb2.Value(string_value=json.dumps(record))
            message = partial(values=[value], resume_token=str(sent).encode())
            if first:
                message.metadata.CopyFrom(metadata)
                first = False
            ended_by_child = "child_partitions_record" in record
            yield message
        if first:
            yield partial(metadata=metadata, resume_token=str(sent).encode())
        if end is not None and not ended_by_child:
            self._wait(end, context)  # Spanner keeps a query open until its end

    @staticmethod
    def _wait(moment: datetime, context) -> bool:
        while True:
            left = (moment - datetime.now(UTC)).total_seconds()
            if left <= 0:
                return True
            if not context.is_active():
                return False
            time.sleep(min(left, 0.1))  # the fake server holds the query open until its end, as Spanner does

    def start(self) -> FakeSpanner:
        def unary(method, request_type, response_type):
            return grpc.unary_unary_rpc_method_handler(
                method, request_type.deserialize, response_type.serialize
            )

        handlers = {
            "CreateSession": unary(self.create_session, spanner.CreateSessionRequest, spanner.Session),
            "BatchCreateSessions": unary(
                self.batch_create_sessions,
                spanner.BatchCreateSessionsRequest,
                spanner.BatchCreateSessionsResponse,
            ),
            "DeleteSession": grpc.unary_unary_rpc_method_handler(
                self.delete_session,
                spanner.DeleteSessionRequest.deserialize,
                empty_pb2.Empty.SerializeToString,
            ),
            "ExecuteStreamingSql": grpc.unary_stream_rpc_method_handler(
                self.execute_streaming_sql,
                spanner.ExecuteSqlRequest.pb().FromString,  # raw protobuf: params as a Struct
                lambda message: message.SerializeToString(),
            ),
        }
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=64))
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("google.spanner.v1.Spanner", handlers),)
        )
        self.port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(0)


if __name__ == "__main__":  # run standalone: python -m tests.partitions.fake_spanner EPOCH PORT
    import sys

    fake = FakeSpanner(
        datetime.fromisoformat(sys.argv[1]), families=int(sys.argv[2]) if len(sys.argv) > 2 else 1
    )
    fake.start()
    print(fake.emulator_host, flush=True)
    threading.Event().wait()
