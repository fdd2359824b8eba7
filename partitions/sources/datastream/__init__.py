"""The Datastream source kind: streams cdcweb watches and operates but does not read.

Pure Python, no Django. ``kind.KIND`` is the kind (settings, ``clean``, ``connect``);
``client.DatastreamApi`` the per-process client over the official Datastream v1 and
Cloud Monitoring clients; ``poll.Poller`` the cheap polling cycle; ``operations`` pause,
resume, recover and backfills followed to their end; ``states`` the mapping of
Datastream's states onto cdcweb's seven; ``metrics`` the Cloud Monitoring metric names.
"""
