"""A stand-in judge command for tests (PTB_JUDGE_COMMAND): argv[1] is the run directory ({run_dir}).

Writes the one-line verdict files into its output folder (PTB_JUDGE_OUTPUT_DIR), not its working directory (a
copy of the run's task/ folder, which may hold files of the same names): contamination flagged
(the exact string: a verdict with a note is unreadable, spec 3.1), and, in a Harbor fork's evaluation-code
access file (whose flagged form carries evidence), what it saw in the working directory (a copy of the run's
task/ folder)."""
import os
import sys
from pathlib import Path

run_dir = Path(sys.argv[1])
seen = ",".join(sorted(p.name for p in Path.cwd().iterdir()))
out = Path(os.environ["PTB_JUDGE_OUTPUT_DIR"])
(out / "contamination_judgement.txt").write_text("contamination detected\n")
(out / "evaluation_access_judgement.txt").write_text(f"evaluation-code access detected: saw {seen} of {run_dir.name}\n")
(out / "disallowed_model_judgement.txt").write_text("only allowed use detected\n")
