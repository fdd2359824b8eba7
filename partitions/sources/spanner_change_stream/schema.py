"""The result shape of a change stream query, as Spanner describes it on the wire.

GoogleSQL: one column ``ChangeRecord`` of type ARRAY<STRUCT<data_change_record
ARRAY<STRUCT<...>>, heartbeat_record ARRAY<STRUCT<...>>, child_partitions_record
ARRAY<STRUCT<...>>>>. PostgreSQL: one column of type JSONB holding one object with
exactly one of the three keys. The simulator builds its metadata from this module and
the parser checks incoming metadata against it, so both always agree.
"""

from __future__ import annotations

from google.cloud.spanner_v1 import StructType, Type, TypeAnnotationCode, TypeCode

# (name, type) pairs; a type is a TypeCode, ("ARRAY", element) or ("STRUCT", fields).
COLUMN_TYPE_FIELDS = (
    ("name", TypeCode.STRING),
    ("type", TypeCode.JSON),
    ("is_primary_key", TypeCode.BOOL),
    ("ordinal_position", TypeCode.INT64),
)
MOD_FIELDS = (
    ("keys", TypeCode.JSON),
    ("new_values", TypeCode.JSON),
    ("old_values", TypeCode.JSON),
)
DATA_CHANGE_RECORD_FIELDS = (
    ("commit_timestamp", TypeCode.TIMESTAMP),
    ("record_sequence", TypeCode.STRING),
    ("server_transaction_id", TypeCode.STRING),
    ("is_last_record_in_transaction_in_partition", TypeCode.BOOL),
    ("table_name", TypeCode.STRING),
    ("column_types", ("ARRAY", ("STRUCT", COLUMN_TYPE_FIELDS))),
    ("mods", ("ARRAY", ("STRUCT", MOD_FIELDS))),
    ("mod_type", TypeCode.STRING),
    ("value_capture_type", TypeCode.STRING),
    ("number_of_records_in_transaction", TypeCode.INT64),
    ("number_of_partitions_in_transaction", TypeCode.INT64),
    ("transaction_tag", TypeCode.STRING),
    ("is_system_transaction", TypeCode.BOOL),
)
HEARTBEAT_RECORD_FIELDS = (("timestamp", TypeCode.TIMESTAMP),)
CHILD_PARTITION_FIELDS = (
    ("token", TypeCode.STRING),
    ("parent_partition_tokens", ("ARRAY", TypeCode.STRING)),
)
CHILD_PARTITIONS_RECORD_FIELDS = (
    ("start_timestamp", TypeCode.TIMESTAMP),
    ("record_sequence", TypeCode.STRING),
    ("child_partitions", ("ARRAY", ("STRUCT", CHILD_PARTITION_FIELDS))),
)
CHANGE_RECORD_FIELDS = (
    ("data_change_record", ("ARRAY", ("STRUCT", DATA_CHANGE_RECORD_FIELDS))),
    ("heartbeat_record", ("ARRAY", ("STRUCT", HEARTBEAT_RECORD_FIELDS))),
    ("child_partitions_record", ("ARRAY", ("STRUCT", CHILD_PARTITIONS_RECORD_FIELDS))),
)
GOOGLESQL_COLUMN = "ChangeRecord"
POSTGRESQL_COLUMN = "read_json_changes"  # Spanner names it after the function; only its type matters


def to_type(spec) -> Type:
    """Return the spanner_v1.Type for a spec of this module."""
    if isinstance(spec, tuple) and spec[0] == "ARRAY":
        return Type(code=TypeCode.ARRAY, array_element_type=to_type(spec[1]))
    if isinstance(spec, tuple) and spec[0] == "STRUCT":
        fields = [StructType.Field(name=name, type_=to_type(sub)) for name, sub in spec[1]]
        return Type(code=TypeCode.STRUCT, struct_type=StructType(fields=fields))
    return Type(code=spec)


def googlesql_row_type() -> StructType:
    """Return the row type of a GoogleSQL change stream query (one ChangeRecord column)."""
    column = to_type(("ARRAY", ("STRUCT", CHANGE_RECORD_FIELDS)))
    return StructType(fields=[StructType.Field(name=GOOGLESQL_COLUMN, type_=column)])


def postgresql_row_type(stream_name: str) -> StructType:
    """Return the row type of a PostgreSQL change stream query (one JSONB column)."""
    column = Type(code=TypeCode.JSON, type_annotation=TypeAnnotationCode.PG_JSONB)
    return StructType(fields=[StructType.Field(name=f"read_json_{stream_name}", type_=column)])
