"""Partitions: the change stream partitions of a stream, their lineage and the reader.

This package's __init__ must stay free of Django imports: the pure subpackages
changestream/ and simulator/ are imported through it.
"""
