"""The Spanner change stream kind: records, parsing, queries, the reader, landing rows, errors.

Pure Python: nothing here imports Django (a test checks it).
"""
