"""Read Spanner change streams: records, parsing, queries, the reader and its errors.

Pure Python: nothing here imports Django (a test checks it).
"""
