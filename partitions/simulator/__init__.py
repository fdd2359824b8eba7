"""Local servers that speak the real gRPC APIs of cdcweb's sources, for the demo, tests and benchmarks.

One package per service on a shared core, all pure Python plus grpc: nothing here imports
Django (a test checks it).

- ``core/``: what the simulators share: server lifecycle, config, clock, topology, workload
  cache, faults.
- ``spanner/``: Spanner change streams and commit-timestamp tables (``spanner_simulator``).
- ``bigtable/``: Bigtable change streams (``bigtable_simulator``).
- ``datastream/``: Datastream and Cloud Monitoring (``datastream_simulator``).
"""
