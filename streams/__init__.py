"""Streams: one Spanner change stream to read, its state machine and its history."""
