"""A local, deterministic Spanner server speaking the real gRPC API.

It serves change streams and tables watched by commit timestamp. Entry points:
``start_server(SimulatorConfig(...))`` (server.py), ``ground_truth(config, database,
start, end)`` (groundtruth.py) and ``table_ground_truth`` (table_reads.py).
"""
