"""The trace rules on Python's ``re`` against the multi-pattern engines, on the texts of one real-sized trace.

Usage: .venv/bin/python bench/rule_engines.py [--trace solve_out.txt] [--repeat 3]

Without ``--trace`` the demo generator's 10-hour Claude Code run (~50 MB, 20,777 tool calls) is written to a
temporary folder. The trace is read as the ingest reads it (decoded, redacted, parsed), and per rule family
(the method rules, the library rules, every rule of ``ingest.facets.CALL_RULES`` over the non-evaluation calls'
texts, and ``OUTPUT_RULES`` over their outputs) this prints the best of ``--repeat`` timings of:

* ``re, one per rule``: each rule's Python pattern searched over each text (how the rules ran before issue 15);
* ``re, one alternation``: the family as one Python pattern of named alternatives, searched once per text (it
  only says whether *some* rule matches; the per-rule answer needs more searches);
* ``re2 Set + confirm``: ``ingest.rules.RuleSet.scan`` (google-re2), then Python's search for every rule the
  Set may match and is not sure of: the same per-rule answers as the first line (checked);
* ``hyperscan + confirm`` (when ``pip install hyperscan`` was run; not a requirement): the same relaxed patterns
  in one Hyperscan database (UTF-8, single match), then the same Python confirmation (checked).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")


def _best(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def _scoped(pattern: re.Pattern[str]) -> str:
    flags = "".join(f for f, bit in (("i", re.I), ("m", re.M), ("s", re.S)) if pattern.flags & bit)
    return f"(?{flags}:{pattern.pattern})" if flags else f"(?:{pattern.pattern})"


def main() -> None:
    parser = argparse.ArgumentParser(description="rule engines side by side (see the module docstring)")
    parser.add_argument("--trace", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import django

    django.setup()
    from ingest import facets
    from demo.tree import make_demo_results
    from ingest.parsers import parse_trace
    from ingest.parsers.framing import decode
    from ingest.redaction import Redactor
    from ingest.rules import RuleSet, relax

    if args.trace is None:
        tmp = Path(tempfile.mkdtemp(prefix="ptb-engines-"))
        report = make_demo_results(root=tmp, runs=12, seed=1, long_run=True)
        assert report.long_run_dir is not None  # asked for with long_run=True
        args.trace = tmp / report.long_run_dir / "solve_out.txt"
    text, _ = decode(args.trace.read_bytes())
    steps = parse_trace(Redactor().redact(text), source=args.trace.name, scaffold="claude").steps
    calls = [c for c in facets.tool_calls(steps) if c.phase != "evaluation"]
    texts = [c.text for c in calls]
    outputs = [c.result.output for c in calls if c.result is not None]
    libraries = {name: facets.CALL_RULES.rules[name] for _, name in facets._LIBRARY_NAMES}
    families = [("method rules", facets.METHOD_RULES, texts), ("library rules", libraries, texts),
                ("every call rule", facets.CALL_RULES.rules, texts),
                ("output rules", facets.OUTPUT_RULES.rules, outputs)]
    try:
        import hyperscan
    except ImportError:
        hyperscan = None
    print(f"{args.trace}: {len(steps)} steps, {len(texts)} non-evaluation calls")
    print(f"{'family':<16} {'rules':>5} {'texts':>6} {'MB':>6}  {'engine':<22} {'s':>7} {'MB/s':>8} {'vs re':>6}")
    for label, rules, corpus in families:
        megabytes = sum(len(t.encode()) for t in corpus) / 1e6
        rules = dict(rules)

        def per_rule():
            return [frozenset(n for n, p in rules.items() if p.search(t)) for t in corpus]

        union = re.compile("|".join(f"(?P<r{i}>{_scoped(p)})" for i, p in enumerate(rules.values())))
        rule_set = RuleSet(rules)

        def confirm(t, may, sure):
            return frozenset(n for n in may if n in sure or rules[n].search(t))

        def with_re2():
            out = []
            for t in corpus:
                may, sure = rule_set.scan(t)
                out.append(confirm(t, may, sure))
            return out

        rows = [("re, one per rule", per_rule), ("re, one alternation", lambda: [union.search(t) for t in corpus]),
                ("re2 Set + confirm", with_re2)]
        if hyperscan is not None:
            names = list(rules)
            database = hyperscan.Database()
            database.compile(expressions=[relax(rules[n]).encode() for n in names], ids=list(range(len(names))),
                             elements=len(names), flags=[hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_SINGLEMATCH
                                                         | hyperscan.HS_FLAG_ALLOWEMPTY] * len(names))
            scratch = hyperscan.Scratch(database)

            def with_hyperscan():
                out = []
                for t in corpus:
                    found: set[str] = set()
                    database.scan(t.encode(), match_event_handler=lambda i, *_: found.add(names[i]),
                                  scratch=scratch)
                    out.append(confirm(t, found, frozenset()))
                return out

            rows.append(("hyperscan + confirm", with_hyperscan))
        anchor, expected = _best(per_rule, args.repeat)  # the first row, the anchor of the ratios
        for engine, fn in rows:
            seconds, result = (anchor, expected) if fn is per_rule else _best(fn, args.repeat)
            if engine not in ("re, one per rule", "re, one alternation"):
                assert result == expected, f"{engine} disagrees with re on {label}"
            print(f"{label:<16} {len(rules):>5} {len(corpus):>6} {megabytes:>6.1f}  {engine:<22} {seconds:>7.3f} "
                  f"{megabytes / seconds:>8.1f} {anchor / seconds:>5.1f}x")


if __name__ == "__main__":
    main()
