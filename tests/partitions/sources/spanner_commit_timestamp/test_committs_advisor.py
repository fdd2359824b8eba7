"""The DDL advisor: a computed shard column, a NULL_FILTERED index, hotspot warnings (seeds 002, 004)."""

from __future__ import annotations

import pytest

from partitions.sources.spanner_commit_timestamp.advisor import advise


def test_googlesql_advice_adds_a_fingerprint_shard_column_and_a_null_filtered_index():
    # given a table keyed by (SingerId, VenueId) with a commit timestamp LastModified
    advice = advise("Singers", "LastModified", ["SingerId", "VenueId"], "googlesql")
    # then the shard column hashes the whole key, as a STORED computed column existing writers need not know
    assert advice.statements == (
        "ALTER TABLE `Singers` ADD COLUMN `ShardId` INT64 AS (MOD(FARM_FINGERPRINT(CONCAT("
        "COALESCE(CAST(`SingerId` AS STRING), ''), '|', "
        "COALESCE(CAST(`VenueId` AS STRING), ''))), 19)) STORED",
        "CREATE NULL_FILTERED INDEX `SingersByShardIdLastModified` ON `Singers` (`ShardId`, `LastModified`)",
    )
    # and the stream settings to go with it watch all 37 values MOD can give
    assert advice.settings == {
        "shard_column": "ShardId",
        "shards": "-18-18",
        "index": "SingersByShardIdLastModified",
    }
    assert advice.warnings == ()
    assert any("37 shard values -18-18" in note for note in advice.notes)


def test_postgresql_advice_uses_its_counterparts_and_says_the_seeds_do_not_cover_them():
    advice = advise("singers", "last_modified", ["singer_id"], "postgresql", modulus=7)
    assert advice.statements == (
        'ALTER TABLE "singers" ADD COLUMN "shard_id" bigint GENERATED ALWAYS AS '
        "(mod(spanner.farm_fingerprint(coalesce(\"singer_id\"::text, '')), 7)) STORED",
        'CREATE INDEX "singers_shard_id_last_modified" ON "singers" ("shard_id", "last_modified") '
        'WHERE "shard_id" IS NOT NULL AND "last_modified" IS NOT NULL',
    )
    assert advice.settings["shards"] == "-6-6"
    assert any(
        "no NULL_FILTERED keyword" in note and "seeds show GoogleSQL only" in note for note in advice.notes
    )


def test_an_existing_shard_column_gets_only_the_index():
    advice = advise(
        "Singers", "LastModified", ["SingerId"], "googlesql", shard_column="Region", shard_column_exists=True
    )
    assert advice.statements == (
        "CREATE NULL_FILTERED INDEX `SingersByRegionLastModified` ON `Singers` (`Region`, `LastModified`)",
    )


def test_a_commit_timestamp_leading_the_primary_key_or_an_index_is_warned_about():
    # given seed 002's hotspot examples: Users keyed by (LastAccess, UserId), indexes led by LastAccess
    advice = advise(
        "Users",
        "LastAccess",
        ["LastAccess", "UserId"],
        "googlesql",
        indexes={
            "UsersByLastAccess": ["LastAccess"],
            "UsersByLastAccessAndName": ["LastAccess", "FirstName"],
            "UsersByName": ["FirstName", "LastAccess"],
        },
    )
    # then each hotspot gets a warning, and an index where the timestamp comes later does not
    assert len(advice.warnings) == 3
    assert "primary key starts with the commit timestamp LastAccess" in advice.warnings[0]
    assert "index UsersByLastAccess starts" in advice.warnings[1]
    assert "index UsersByLastAccessAndName starts" in advice.warnings[2]


def test_names_in_googlesql_match_whatever_their_case_but_not_in_postgresql():
    assert len(advise("T", "ts", ["TS"], "googlesql").warnings) == 1
    assert len(advise("t", "ts", ["TS"], "postgresql").warnings) == 0


@pytest.mark.parametrize(
    ("args", "kwargs"), [(("T;", "ts", ["id"], "googlesql"), {}), (("T", "ts", ["id"], "mysql"), {})]
)
def test_bad_names_or_dialects_are_refused(args, kwargs):
    with pytest.raises(ValueError, match="invalid|unknown"):
        advise(*args, **kwargs)
