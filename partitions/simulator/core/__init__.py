"""What the Spanner and Bigtable simulators share.

- ``clock``: microseconds since 1970 and back, the wall clock in them.
- ``config``: ``ChangeStreamConfig``, the settings both hold (seed, partitions over time,
  rate, retention, epoch, faults, threads), and the parsers of their command-line forms.
- ``topology``: the partitions of a change stream over time, key ranges that split and
  merge at deterministic moments.
- ``workload``: events drawn second by second, each second generated once and cached.
- ``faults``: injected faults (slow messages, a stream that breaks), reproducible by key.
"""
