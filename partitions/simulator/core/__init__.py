"""What the Spanner and Bigtable simulators share.

``topology``: the partitions of a change stream over time, key ranges that split and merge
at deterministic moments.
"""
