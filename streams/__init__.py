"""Streams: one source of change data to read or watch, its state machine, its history and errors.

The bottom app: it imports nothing of partitions or cdcweb (tests/test_layers.py).
"""
