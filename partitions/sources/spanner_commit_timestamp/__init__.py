"""Spanner tables watched by commit timestamp, as Spanner Change Watcher does (DESIGN §11).

Pure Python, no Django. The kind (``kind.KIND``) polls a table's rows whose commit
timestamp column moved past a cursor, one fixed partition per shard value (or one for
the whole table), each poll in one strong read-only transaction. Modules: settings
(declarations and checks), query (poll SQL, both dialects), values and records (rows
to records), poller (one poll: the PartitionRead), source (the Source), landing (the
landing envelope), errors (classification), advisor (shard column and index DDL).
"""
