"""`python -m cdcweb.dbserver start|stop|status|url [VAR_DIR]`: the embedded PostgreSQL by hand.

Start it, stop it, say whether it runs, or print its DATABASE_URL (for psql, pg_dump or a
process that should use it explicitly). VAR_DIR defaults to CDC_VAR_DIR (./var).
"""

from __future__ import annotations

import sys
from pathlib import Path

from cdcweb import embedded_db


def main(argv: list[str]) -> int:
    """`python -m cdcweb.dbserver start|stop|status|url [VAR_DIR]`."""
    if not argv or argv[0] not in {"start", "stop", "status", "url"}:
        print("usage: python -m cdcweb.dbserver start|stop|status|url [VAR_DIR]", file=sys.stderr)
        return 2
    var_dir = Path(argv[1]).resolve() if len(argv) > 1 else embedded_db.default_var_dir()
    if argv[0] == "status":
        running = embedded_db.is_running(var_dir)
        print(f"{'running' if running else 'stopped'}: {embedded_db.data_dir(var_dir)}")
        return 0 if running else 1
    if argv[0] == "start":
        embedded_db.ensure_running(var_dir)
    elif argv[0] == "stop":
        embedded_db.stop(var_dir)
    else:
        print(embedded_db.url(var_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
