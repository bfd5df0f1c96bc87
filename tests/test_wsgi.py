"""The web worker's process (ptbsite/wsgi.py, what `manage.py serve` runs in gunicorn): pandas and Jinja2 are kept out
of it, and the writes a web worker makes still work.

Found by a new user of `make serve` + `make worker`: "Re-run judge" failed with a 500 on the worker's
`/api/worker/jobs/<id>/finish`, because storing the judge's verdicts builds an Arrow table (traces.records.arrow_table)
and pyarrow's pandas check read the `sys.modules["pandas"] = None` mark as a module (`None.__version__`). Run in a
fresh process: the mark would otherwise hold for this whole test process.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What a web worker does on a judge re-run's /finish and a rerun's evaluation: an Arrow table of write rows
# (traces.services.insert_records), registered in DuckDB; and a page's read with a bound parameter.
CODE = """
import sys
import ptbsite.wsgi  # noqa: F401 (the web worker's start: its pandas rule, Django set up)
import duckdb
from traces.records import VerdictRow, arrow_table

table = arrow_table(VerdictRow, [VerdictRow(run_id="r1", judge="mock_hosted", attempt="rerun", era="judgement_json",
                                            kind="contamination", value="flagged", flagged=True, text="test split",
                                            note=None, source_file="judgement_mock_hosted.json")])
con = duckdb.connect()
con.register("new_rows", table)
print(con.execute("SELECT judge, flagged FROM new_rows WHERE kind = ?", ["contamination"]).fetchall())
print("pandas imported:", "pandas" in sys.modules and sys.modules["pandas"] is not None)
try:
    import pandas  # noqa: F401
except ImportError:
    print("pandas import refused")
print("jinja2 imported:", "jinja2" in sys.modules)
try:
    import jinja2  # noqa: F401
except ImportError:
    print("jinja2 import refused")
"""


def test_a_web_worker_builds_arrow_tables_without_pandas(tmp_path: Path) -> None:
    env = {**os.environ, "PTB_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "ptbsite.settings"}
    out = subprocess.run([sys.executable, "-c", CODE], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[-5:] == ["[('mock_hosted', True)]", "pandas imported: False", "pandas import refused",
                          "jinja2 imported: False", "jinja2 import refused"]
