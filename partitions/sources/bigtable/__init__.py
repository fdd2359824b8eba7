"""Read Bigtable change streams: records, row ranges, cursors, the reader, landing, the kind.

Pure Python plus the official client: nothing here imports Django (a test checks it).
The kind object the pipeline registers is ``partitions.sources.bigtable.kind.KIND``.
"""
