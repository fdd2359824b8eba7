"""Fixtures: a Datastream simulator with a movable clock, and the official clients on it."""

from __future__ import annotations

import time

import grpc
import pytest
from google.cloud import datastream_v1, monitoring_v3
from google.cloud.datastream_v1.services.datastream.transports import DatastreamGrpcTransport
from google.cloud.monitoring_v3.services.metric_service.transports import MetricServiceGrpcTransport

from partitions.simulator.datastream.config import DatastreamSimConfig, SimClock
from partitions.simulator.datastream.server import start_server

SIM_CONFIG = dict(seed=3, streams=20, cycle=600.0, operation_seconds=2.0, metric_step=30.0)


@pytest.fixture
def sim():
    """Yield a fresh simulator (``.clock`` moves forward on demand) with a pinned epoch."""
    server = start_server(DatastreamSimConfig(epoch=time.time(), **SIM_CONFIG), clock=SimClock())
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def datastream(sim):
    """Return the official Datastream client on the simulator, over an insecure channel."""
    channel = grpc.insecure_channel(sim.endpoint)
    return datastream_v1.DatastreamClient(transport=DatastreamGrpcTransport(channel=channel))


@pytest.fixture
def monitoring(sim):
    """Return the official Cloud Monitoring client on the simulator."""
    channel = grpc.insecure_channel(sim.endpoint)
    return monitoring_v3.MetricServiceClient(transport=MetricServiceGrpcTransport(channel=channel))
