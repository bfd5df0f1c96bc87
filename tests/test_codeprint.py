"""``ptbsite.codeprint.code_fingerprint``: what the page cache's keys hold of the code besides the warehouse
version (a restart with the same code keeps the cached pages; changed code, templates or settings do not)."""
from __future__ import annotations

from pathlib import Path

from ptbsite import codeprint


def _tree(root: Path) -> Path:
    (root / "traces" / "__pycache__").mkdir(parents=True)
    (root / "templates").mkdir()
    (root / "traces" / "views.py").write_text("def view(): return 1\n")
    (root / "traces" / "__pycache__" / "views.cpython-311.pyc").write_bytes(b"\x00compiled")
    (root / "templates" / "run.html").write_text("<p>{{ run.id }}</p>\n")
    (root / "templates" / "notes.bak").write_text("not rendering code\n")
    return root


def test_the_fingerprint_changes_with_the_code_templates_and_settings_only(tmp_path: Path):
    root = _tree(tmp_path)
    folders = ("traces", "templates")
    env = {"PTB_STEPS_PER_PAGE": "200", "HOME": "/root"}
    first = codeprint.code_fingerprint(root, folders, environ=env)
    assert len(first) == 64 and first == codeprint.code_fingerprint(root, folders, environ=dict(env))

    # Not inputs of a page: bytecode caches, other suffixes, environment variables outside PTB_/DJANGO_.
    (root / "traces" / "__pycache__" / "views.cpython-311.pyc").write_bytes(b"\x00recompiled")
    (root / "templates" / "notes.bak").write_text("edited\n")
    assert codeprint.code_fingerprint(root, folders, environ={**env, "HOME": "/home/x"}) == first

    # Inputs: a setting, a template, the code, a new file.
    assert codeprint.code_fingerprint(root, folders, environ={**env, "PTB_STEPS_PER_PAGE": "100"}) != first
    assert codeprint.code_fingerprint(root, folders, environ={**env, "DJANGO_DEBUG": "1"}) != first
    (root / "templates" / "run.html").write_text("<p>{{ run.id }}!</p>\n")
    templated = codeprint.code_fingerprint(root, folders, environ=env)
    assert templated != first
    (root / "traces" / "views.py").write_text("def view(): return 2\n")
    coded = codeprint.code_fingerprint(root, folders, environ=env)
    assert coded not in (first, templated)
    (root / "traces" / "extra.py").write_text("X = 1\n")
    assert codeprint.code_fingerprint(root, folders, environ=env) not in (first, templated, coded)


def test_the_serving_fingerprint_covers_this_project():
    served = codeprint.serving_code()
    assert len(served) == 16 and served == codeprint.code_fingerprint(Path(__file__).resolve().parent.parent)[:16]
