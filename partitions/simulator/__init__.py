"""A local, deterministic Spanner change stream server speaking the real gRPC API.

Pure Python plus grpc: nothing here imports Django (a test checks it). Entry points:
``start_server(SimulatorConfig(...))`` and ``ground_truth(config, database, start, end)``.
"""
