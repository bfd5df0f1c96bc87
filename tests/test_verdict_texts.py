"""The one-line verdict files read as upstream's aggregation reads them (scripts/utils.py on qol_multigpu,
aggregate_contamination.py on main): the whole content, trimmed of surrounding whitespace, must equal the clean
or the flagged string exactly; anything else is IMPORTANT ERR (here ``malformed``, shown as "unreadable judge
output"), a missing file ERR (``missing``). Both fall back to the base model like a flag."""
from __future__ import annotations

import pytest

from traces.verdicts import Verdict, effective_flags, read_txt_verdict, read_verdicts

# (file content, upstream's value for contamination_judgement.txt, ours: (value, flagged))
CONTAMINATION = [
    ("no contamination detected", False, ("clean", False)),
    ("contamination detected", True, ("flagged", True)),
    ("no contamination detected\n", False, ("clean", False)),                 # the harness writes a newline
    ("  no contamination detected \t\r\n\n", False, ("clean", False)),        # surrounding whitespace
    ("\ncontamination detected\n\n", True, ("flagged", True)),
    ("No contamination detected", "IMPORTANT ERR", ("malformed", None)),      # case
    ("NO CONTAMINATION DETECTED", "IMPORTANT ERR", ("malformed", None)),
    ("Contamination detected", "IMPORTANT ERR", ("malformed", None)),
    ("no  contamination detected", "IMPORTANT ERR", ("malformed", None)),     # whitespace inside
    ("no contamination detected (judge skipped)", "IMPORTANT ERR", ("malformed", None)),  # a fork's note
    ("no contamination detected: none found", "IMPORTANT ERR", ("malformed", None)),
    ("contamination detected: trained on the test split", "IMPORTANT ERR", ("malformed", None)),
    ("contamination detected (3 samples)", "IMPORTANT ERR", ("malformed", None)),
    ("no contamination detected.", "IMPORTANT ERR", ("malformed", None)),
    ("", "IMPORTANT ERR", ("malformed", None)),                               # empty
    ("   \n", "IMPORTANT ERR", ("malformed", None)),
    ("no contamination detected\nno contamination detected", "IMPORTANT ERR", ("malformed", None)),  # two lines
    ("no contamination detected\ncontamination detected", "IMPORTANT ERR", ("malformed", None)),
    ("The judge thinks: no contamination detected", "IMPORTANT ERR", ("malformed", None)),  # never a substring
    ("No contamination_judgement.txt produced.", "IMPORTANT ERR", ("missing", None)),  # export placeholder
    ("judge unavailable (rate limited)", "IMPORTANT ERR", ("unavailable", None)),
]
DISALLOWED = [
    ("only allowed use detected", False, ("clean", False)),
    ("disallowed use detected", True, ("flagged", True)),
    (" only allowed use detected\n", False, ("clean", False)),
    ("Only allowed use detected", "IMPORTANT ERR", ("malformed", None)),
    ("only allowed use detected (judge skipped)", "IMPORTANT ERR", ("malformed", None)),
    ("disallowed use detected: downloaded Qwen/Qwen3-4B", "IMPORTANT ERR", ("malformed", None)),
    ("", "IMPORTANT ERR", ("malformed", None)),
    ("only allowed use detected\ndisallowed use detected", "IMPORTANT ERR", ("malformed", None)),
    ("allowed use detected", "IMPORTANT ERR", ("malformed", None)),
]


@pytest.mark.parametrize(("text", "upstream", "ours"), CONTAMINATION)
def test_contamination_texts(text, upstream, ours):
    value, flagged, note = read_txt_verdict("contamination", text)
    assert (value, flagged) == ours
    # Our reading falls back exactly where upstream's does: on a flag and on anything but the two exact strings.
    falls_back = effective_flags([Verdict("codex", "original", "txt", "contamination", value, flagged, text, note,
                                          "contamination_judgement.txt"),
                                  Verdict("codex", "original", "txt", "disallowed_model", "clean", False, "", None,
                                          "disallowed_model_judgement.txt")])["contamination"] is not None
    assert falls_back == (upstream is not False)
    if value == "malformed":
        assert note == "not exactly 'no contamination detected' or 'contamination detected'"


@pytest.mark.parametrize(("text", "upstream", "ours"), DISALLOWED)
def test_disallowed_model_texts(text, upstream, ours):
    value, flagged, _ = read_txt_verdict("disallowed_model", text)
    assert (value, flagged) == ours
    assert (value in ("clean",)) == (upstream is False)


def test_harbor_questions_keep_their_flagged_form_with_evidence():
    """Only the Harbor forks' own questions have a flagged form with evidence; a clean one with a note is not clean."""
    assert read_txt_verdict("evaluation_access", "evaluation-code access detected: edited evaluate.py") == (
        "flagged", True, "edited evaluate.py")
    assert read_txt_verdict("evaluation_access", "no evaluation-code access detected (skipped)")[0] == "malformed"
    assert read_txt_verdict("disallowed_api_usage", "no external API usage detected") == ("clean", False, None)


def _run(tmp_path, **files):
    run = tmp_path / "gsm8k_Qwen_Qwen3-4B-Base_17000001"
    run.mkdir()
    for name, text in files.items():
        (run / name).write_text(text)
    return run


def test_an_absent_file_is_missing_and_falls_back(tmp_path):
    run = _run(tmp_path, **{"disallowed_model_judgement.txt": "only allowed use detected\n"})
    verdicts = read_verdicts(run)
    (contamination,) = [v for v in verdicts if v.kind == "contamination"]
    assert (contamination.value, contamination.value_text, contamination.source_file) == ("missing", "missing", None)
    assert effective_flags(verdicts) == {"contamination": "judge_error", "disallowed_model": None,
                                         "disallowed_api_usage": None}


def test_both_files_absent_and_the_note_shown_as_unreadable(tmp_path):
    nothing = read_verdicts(_run(tmp_path))
    assert {(v.kind, v.value) for v in nothing} == {("contamination", "missing"), ("disallowed_model", "missing")}
    other = tmp_path / "other"
    other.mkdir()
    noted = read_verdicts(_run(other, **{"contamination_judgement.txt": "no contamination detected (judge skipped)\n",
                                          "disallowed_model_judgement.txt": "only allowed use detected\n"}))
    (v,) = [v for v in noted if v.kind == "contamination"]
    assert (v.value, v.value_text, v.flagged, v.text) == ("malformed", "unreadable judge output", None,
                                                          "no contamination detected (judge skipped)")
    assert effective_flags(noted)["contamination"] == "judge_error"


def test_the_run_page_shows_unreadable_judge_output_with_its_text(tmp_path, fresh_warehouse, client):
    from leaderboard.services import import_published
    from traces import layout
    from ingest.tree import ingest_tree

    import_published()
    method = tmp_path / "results" / "claude_claude-opus-4-6_10h_run2"
    method.mkdir(parents=True)
    run = _run(method, **{"contamination_judgement.txt": "no contamination detected: none found\n",
                          "disallowed_model_judgement.txt": "only allowed use detected\n",
                          "time_taken.txt": "05:00:00\n", "metrics.json": '{"accuracy": 0.5}'})
    assert ingest_tree(root=tmp_path / "results", synthetic=False).stored == 1
    run_id = layout.run_id(method.name, run.name)
    html = client.get(f"/runs/{run_id}/").content.decode()
    assert '<span class="badge malformed">unreadable judge output</span>' in html
    assert "no contamination detected: none found" in html
    data = client.get(f"/api/runs/{run_id}").json()
    (verdict,) = [v for v in data["verdicts"] if v["kind"] == "contamination"]
    assert (verdict["value"], verdict["value_text"]) == ("malformed", "unreadable judge output")


def test_json_verdict_texts_are_redacted_after_decoding(tmp_path):
    """A key spelled with JSON escapes in a judge's verdict JSON is whole only once decoded: ``redact`` sees the
    decoded text too (issue 25), for the ingest and for a judge re-run's files alike."""
    from ingest.redaction import PLACEHOLDER, Redactor

    key = "sk-ant-api03-" + "Zq8Xw2Vb4Nm6Lk0Jh3Gf5Dd7Sa9Pe1Rt" * 2
    escaped = key.replace("-", "\\u002d")
    (tmp_path / "judgement_codex.json").write_text(
        '{"contamination": false, "justification_contamination": "the agent printed ' + escaped + '"}')
    (tmp_path / "judge_result.json").write_text(
        '{"contamination_detected": false, "justification_contamination": "' + escaped + '"}')
    verdicts = read_verdicts(tmp_path, Redactor().redact)
    texts = sorted(v.text for v in verdicts if v.source_file)
    assert texts == [PLACEHOLDER, f"the agent printed {PLACEHOLDER}"]
