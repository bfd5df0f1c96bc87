"""The runs list's and search's filter choices (``traces.selectors.runs.read_filter_options``) against main's agent
list before branch nuz2 (stored names, one row per agent key): milliseconds per call, wall and CPU, alternated in one
process on the warehouse ``PTB_WAREHOUSE`` names (the install's by default).

    PYTHONPATH=. PTB_DUCKDB_THREADS=1 .venv/bin/python bench/filter_options.py [CALLS]
"""
from __future__ import annotations

import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
django.setup()

from ptbsite import warehouse  # noqa: E402
from traces.selectors import runs  # noqa: E402


def before(con) -> list[tuple[str, str]]:
    """Main's agent list before nuz2: (key, stored name) pairs sorted by name (the benchmarks' and base models'
    lists, unchanged, left out)."""
    pairs, _, _ = con.execute(
        "SELECT list(DISTINCT struct_pack(k := m.agent_key, n := m.agent_name)), list(DISTINCT r.benchmark), "
        f"list(DISTINCT r.base_model) FROM runs r JOIN methods m ON m.id = r.method WHERE {runs.AGENT_RUN}").fetchone()
    return sorted(((p["k"], p["n"]) for p in pairs or ()),
                  key=lambda a: (a[1] is None, a[1] or "", a[0] is None, a[0] or ""))


def main() -> None:
    """Print each version's ms per call (wall, CPU) twice, alternated."""
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with warehouse.connect() as con:
        for name, read in (("before", before), ("nuz2", runs.read_filter_options)) * 2:
            read(con)
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(calls):
                read(con)
            print(f"{name}: wall {1000 * (time.perf_counter() - wall) / calls:.1f} ms, "
                  f"CPU {1000 * (time.process_time() - cpu) / calls:.1f} ms per call")


if __name__ == "__main__":
    main()
