"""A local Datastream and Cloud Monitoring server for cdcweb's Datastream source kind.

Pure Python plus gRPC, no Django: it speaks the real v1 Datastream API, the
google.longrunning Operations API and Cloud Monitoring's MetricService, so the official
clients work against it unchanged. Streams are scripted by seed (every state in turn,
errors that appear and clear, backfills that progress) and changed by operations that
take a few seconds, refusing what Datastream refuses. Start it with ``start_server`` or
``manage.py datastream_simulator``.
"""
