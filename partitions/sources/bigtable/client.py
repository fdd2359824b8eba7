"""The official low-level Bigtable data client, one per process and endpoint, reused.

Only ``google.cloud.bigtable_v2.BigtableClient`` exposes the change stream methods
(GenerateInitialChangeStreamPartitions, ReadChangeStream). With ``BIGTABLE_EMULATOR_HOST``
(host:port) set it talks plain gRPC to that endpoint without credentials (the simulator
or an emulator); otherwise it reaches real Bigtable with the environment's credentials.
"""

from __future__ import annotations

import os
import threading

import grpc
from google.cloud.bigtable_v2 import BigtableClient
from google.cloud.bigtable_v2.services.bigtable.transports.grpc import BigtableGrpcTransport

EMULATOR_ENV = "BIGTABLE_EMULATOR_HOST"
# The transport's own defaults for real Bigtable (change stream messages carry cell
# values, which may exceed gRPC's 4 MiB default limit), and gRPC's single-threaded
# server streams: ReadChangeStream sends one message per change, and by default each
# passes from gRPC's channel thread to the reading thread, two GIL hand-overs that cost
# a switch interval each in a busy reader (the demo's Bigtable backlog, read beside two
# change streams, moved at some 15 changes a second per partition: docs/benchmarks.md).
_CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
    ("SingleThreadedUnaryStream", 1),
]

_clients: dict[str | None, BigtableClient] = {}
_lock = threading.Lock()


def emulator_host() -> str | None:
    """Return host:port from BIGTABLE_EMULATOR_HOST, or None for real Bigtable."""
    return os.environ.get(EMULATOR_ENV) or None


def data_client(host: str | None = None) -> BigtableClient:
    """Return the process's client for an emulator host (None: real Bigtable)."""
    # One client per endpoint: each owns a channel, and a worker reading window after
    # window must not open a new connection every time.
    with _lock:
        client = _clients.get(host)
        if client is None:
            client = _clients[host] = _new_client(host)
        return client


def _new_client(host: str | None) -> BigtableClient:
    """Return a new client: insecure and anonymous for an emulator host, else real Bigtable."""
    if host is None:
        # The transport's own channel factory (credentials from the environment), with our options.
        channel = BigtableGrpcTransport.create_channel(options=_CHANNEL_OPTIONS)
        return BigtableClient(transport=BigtableGrpcTransport(channel=channel))
    channel = grpc.insecure_channel(host, options=_CHANNEL_OPTIONS)
    return BigtableClient(transport=BigtableGrpcTransport(host=host, channel=channel))


def table_path(project: str, instance: str, table: str) -> str:
    """Return the table's resource name, as the change stream requests name it."""
    return f"projects/{project}/instances/{instance}/tables/{table}"
