"""A local, deterministic Bigtable change stream server speaking the real gRPC API.

Pure Python plus grpc: nothing here imports Django (a test checks it). Entry points:
``start_server(BigtableSimulatorConfig(...))`` and ``ground_truth(config, table, start, end)``.
"""
