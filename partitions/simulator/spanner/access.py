"""Who may query: the simulator's PERMISSION_DENIED answers, worded as Cloud Spanner words them.

A denial names a database and, optionally, a database role (``--deny DATABASE[:ROLE]``):

- without a role, callers that use no database role (IAM principals) lack
  ``spanner.databases.select`` there, as with roles/spanner.viewer: GetDatabase still
  answers, every query (INFORMATION_SCHEMA, tables, change streams) is refused;
- with a role, sessions created with that database role (fine-grained access control)
  may read INFORMATION_SCHEMA and tables but not the change stream's read function,
  as when the role has SELECT on the change stream but not EXECUTE on its function.
"""

from __future__ import annotations

import grpc

from partitions.sources.spanner_change_stream.query import GOOGLESQL

from .sql import QueryError


def read_function(dialect: str, stream: str) -> str:
    """Return the change stream's read function as a message names it."""
    return f"table function READ_{stream}" if dialect == GOOGLESQL else f"function spanner.read_json_{stream}"


def refusal(
    denied: tuple[tuple[str, str], ...], session: str, database: str, role: str, function: str | None
) -> QueryError | None:
    """Return the PERMISSION_DENIED a query meets, or None when it may run.

    ``session`` is the session's full name, ``role`` the database role it was created
    with ("" for none) and ``function`` the read function a change stream query calls
    (None for any other query).
    """
    for name, denied_role in denied:
        if name != database:
            continue
        if not denied_role and not role:
            resource = session.split("/sessions/")[0]
            return QueryError(
                grpc.StatusCode.PERMISSION_DENIED,
                f"Caller is missing IAM permission spanner.databases.select on resource {resource}.",
            )
        if denied_role and denied_role == role and function is not None:
            return QueryError(
                grpc.StatusCode.PERMISSION_DENIED,
                f"Role {role} does not have required privileges on {function}.",
            )
    return None
