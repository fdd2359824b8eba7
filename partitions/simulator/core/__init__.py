"""What the simulators share (Datastream's uses the server and Refusal only).

- ``server``: ``GrpcSimulator``, the life of a simulator's gRPC server (thread pool, free
  port, call log, live waits, stop), and ``Refusal``, a request the real service refuses.
- ``clock``: microseconds since 1970 and back, the wall clock in them.
- ``config``: ``ChangeStreamConfig``, the settings of the Spanner and Bigtable simulators
  (seed, partitions over time, rate, retention, epoch, faults, threads), and the parsers
  of their command-line forms.
- ``topology``: the partitions of a change stream over time, key ranges that split and
  merge at deterministic moments.
- ``workload``: events drawn second by second, each second generated once and cached.
- ``faults``: injected faults (slow messages, a stream that breaks), reproducible by key.
"""
