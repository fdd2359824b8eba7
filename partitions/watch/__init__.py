"""Watched streams: streams their source runs (Datastream), polled into cdcweb's tables and operated.

cdcweb reads none of their data. Beat polls every watched stream (``polling``) into the
same Stream, StreamTransition, StreamError, Partition (one per source object) and
LagSample rows that read streams fill, plus one ``WatchedStream`` row of what only the
source knows; ``importing`` registers a location's streams; ``operating`` carries out an
operator's action through the source and follows it to its end (StreamOperation).
"""
