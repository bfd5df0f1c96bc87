"""How many other runs' pages offer each run to compare with (``traces.selectors.compare.pick_peers``): the pages a
change to one run re-renders in the static export (issue 24).

Usage: PTB_WAREHOUSE=<spec> .venv/bin/python bench/peer_listing.py [--first-by-name]

Prints, over every agent run of the warehouse, the median, p75, p99 and max of the number of other runs whose peer
list holds it, how many are offered by more than 20 pages, and the mean peers per page. ``--first-by-name`` counts
the choice before issue 24's change (the first PEERS_SHOWN other methods of the cell by name) from the same rows,
so both are measured side by side in one run. Reads only (``run_fingerprint_parts``)."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections import Counter
from typing import NamedTuple
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")


class CellRun(NamedTuple):
    """What choosing peers reads of a run (``traces.selectors.compare.PeerKey``)."""

    id: str
    method: str
    agent_key: str
    cluster_id: int
    is_latest: bool


def first_by_name(run, cell, shown: int) -> list[str]:
    """The peers before the change: every attempt and repeat, then the first ``shown`` other methods by name."""
    rows = [r for r in cell if r.id != run.id and (r.method == run.method or r.is_latest)]
    own = [r.id for r in rows if r.agent_key == run.agent_key]
    others = sorted((r for r in rows if r.agent_key != run.agent_key), key=lambda r: (r.method, -r.cluster_id))
    return own + [r.id for r in others[:shown]]


def summary(name: str, peers: dict[str, list[str]]) -> str:
    listed = Counter(p for ps in peers.values() for p in ps)
    counts = sorted(listed.get(r, 0) for r in peers)
    n = len(counts)
    return (f"{name}: {n} runs; offered by other pages: median {statistics.median(counts)}, p75 {counts[3 * n // 4]}, "
            f"p99 {counts[99 * n // 100]}, max {counts[-1]}; offered by > 20 pages: {sum(c > 20 for c in counts)}; "
            f"peers per page {sum(map(len, peers.values())) / n:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-by-name", action="store_true", help="also count the choice before the change")
    args = parser.parse_args()
    import django

    django.setup()
    from ptbsite import warehouse
    from traces.selectors.compare import PEERS_SHOWN
    from traces.selectors.feeds import run_fingerprint_parts
    from traces.selectors.runs import AGENT_RUN

    peers = run_fingerprint_parts().peers
    if not peers:
        raise SystemExit("no agent runs in this warehouse")
    print(summary("the agents after it by name (now)", peers))
    if args.first_by_name:
        with warehouse.connect() as con:
            rows = con.execute(f"SELECT r.id, r.method, m.agent_key, r.cluster_id, r.is_latest, r.suite, r.benchmark, "
                               f"r.base_model FROM runs r JOIN methods m ON m.id = r.method WHERE {AGENT_RUN}").fetchall()
        cells: dict[tuple, list[CellRun]] = {}
        for *run, suite, benchmark, base_model in rows:
            cells.setdefault((suite, benchmark, base_model), []).append(CellRun(*run))
        before = {r.id: first_by_name(r, cell, PEERS_SHOWN) for cell in cells.values() for r in cell}
        print(summary("the first by name (before)", before))


if __name__ == "__main__":
    main()
