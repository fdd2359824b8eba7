"""Row deletes arrive as Bigtable reports them: a delete per family, or DeleteFromRow when sent so."""

from __future__ import annotations

from dataclasses import replace

from bigtable_follow import Follower
from bigtable_support import OPTIONS, identity, past_window, source_for

from partitions.simulator.bigtable.groundtruth import ground_truth
from partitions.simulator.bigtable.server import start_server
from partitions.simulator.bigtable.workload import FAMILIES
from partitions.sources.bigtable.records import DeleteFromFamily, DeleteFromRow


def test_a_row_delete_arrives_as_one_delete_per_family_by_default(bigtable_simulator, bigtable_source):
    # given the default server, which reports a row delete as Bigtable does (seed 003)
    start, end = past_window(3, ago=110)
    # when a window is followed
    follower = Follower(bigtable_source, start, end, OPTIONS)
    follower.run()
    # then row deletes came as a DeleteFromFamily for each family, never as DeleteFromRow
    mods = [c.mods for c in follower.changes()]
    family_runs = [
        m for m in mods if tuple(DeleteFromFamily(f) for f in FAMILIES) in _windows(m, len(FAMILIES))
    ]
    assert family_runs
    assert not any(isinstance(mod, DeleteFromRow) for m in mods for mod in m)


def _windows(mods: tuple, size: int) -> set[tuple]:
    return {mods[i : i + size] for i in range(len(mods) - size + 1)}


def test_delete_from_row_is_read_when_the_server_sends_it(bigtable_simulator):
    # given a server that sends row deletes as DeleteFromRow mutations
    server = start_server(replace(bigtable_simulator.config, raw_row_deletes=True))
    try:
        start, end = past_window(3, ago=110)
        # when a window is followed
        follower = Follower(source_for(server), start, end, OPTIONS)
        follower.run()
        # then the row deletes arrive as such, and everything else as written
        changes = follower.changes()
        assert any(isinstance(mod, DeleteFromRow) for c in changes for mod in c.mods)
        assert {identity(c) for c in changes} == set(ground_truth(server.config, "events", start, end))
    finally:
        server.stop(grace=0)
