"""Partitions: how a stream's source is cut up and read, and how far each part got.

- at the root, what other apps may import: the models (Partition, PartitionEdge, LagSample),
  the partition state machine and the read models (progress, queries, stalls); and this
  app's own pages (views, api/, admin, management commands);
- sources/: the kinds of source, one pure package each, and their contract;
- pipeline/: the reading pipeline (Celery tasks, leases, windows, checkpoints, scheduling);
- simulator/: the local servers the demo, the tests and the benchmarks read.

This package's __init__ stays free of Django imports: the pure subpackages sources/ and
simulator/ are imported through it.
"""
