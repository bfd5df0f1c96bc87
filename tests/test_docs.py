"""Every citation of the formats spec in the code resolves to a numbered section of docs/posttrainbench-formats.md,
which ships with the project."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("ptbsite", "leaderboard", "traces", "ingest", "evaluator", "export", "demo", "templates", "bench", "scripts")
CITATION = re.compile(r"\bspec (?:section )?(\d+(?:\.\d+)?)\b")


def test_every_spec_citation_names_a_section_of_the_shipped_spec() -> None:
    spec = (ROOT / "docs/posttrainbench-formats.md").read_text()
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", spec, re.M))
    assert sections == {"1", "1.1", "1.2", "1.3", "1.4", "1.5", "2", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7",
                        "3", "3.1", "3.2", "3.3", "3.4", "4", "4.1", "4.2", "4.3", "4.4", "5", "6"}
    cited: dict[str, list[str]] = {}
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".html", ".js", ".md", ".sh") and "__pycache__" not in path.parts:
                for number in CITATION.findall(path.read_text(errors="replace")):
                    cited.setdefault(number, []).append(str(path.relative_to(ROOT)))
    assert len(cited) >= 20  # the code cites the spec throughout
    unresolved = {number: files for number, files in cited.items() if number not in sections}
    assert unresolved == {}
