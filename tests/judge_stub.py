"""A stand-in judge command for tests (PTB_JUDGE_COMMAND): argv[1] is the run directory ({run_dir}).

Writes the one-line verdict files into its working directory, as the real judge does: contamination is
flagged with a note naming what it saw in the working directory (a copy of the run's task/ folder)."""
import sys
from pathlib import Path

run_dir = Path(sys.argv[1])
seen = ",".join(sorted(p.name for p in Path.cwd().iterdir()))
Path("contamination_judgement.txt").write_text(f"contamination detected: saw {seen} of {run_dir.name}\n")
Path("disallowed_model_judgement.txt").write_text("only allowed use detected\n")
