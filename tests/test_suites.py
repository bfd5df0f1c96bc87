"""The typed suite file: validated on load, with errors naming the file and the field."""
from __future__ import annotations

import json

import pytest

from ptbsite import suites
from ptbsite.suites import SuiteError, get_suite, load_suite


def test_the_default_suite_is_the_setting(settings) -> None:
    assert settings.DEFAULT_SUITE == "posttrainbench"
    assert get_suite().id == "posttrainbench"
    assert [b.id for b in get_suite().benchmarks] == [
        "aime2025", "arenahardwriting", "bfcl", "gpqamain", "gsm8k", "healthbench", "humaneval"]
    assert get_suite("frogsgame").scoring_rule == "best_checkpoint"
    assert load_suite("frogsgame")["id"] == "frogsgame"


def test_a_field_of_the_wrong_type_is_named_with_its_file(tmp_path, monkeypatch) -> None:
    suite = json.loads((suites.SUITES_DIR / "frogsgame.json").read_text())
    del suite["benchmarks"][0]["metric"]
    (tmp_path / "frogsgame.json").write_text(json.dumps(suite))
    monkeypatch.setattr(suites, "SUITES_DIR", tmp_path)
    with pytest.raises(SuiteError) as error:
        get_suite("frogsgame")
    assert str(error.value) == f"{tmp_path / 'frogsgame.json'}: field benchmarks.0.metric: Field required"


def test_an_unknown_scoring_rule_is_rejected(tmp_path, monkeypatch) -> None:
    suite = json.loads((suites.SUITES_DIR / "frogsgame.json").read_text())
    suite["scoring_rule"] = "best_of_all"
    (tmp_path / "frogsgame.json").write_text(json.dumps(suite))
    monkeypatch.setattr(suites, "SUITES_DIR", tmp_path)
    with pytest.raises(SuiteError, match=r"frogsgame.json: field scoring_rule: Input should be 'final_model' or "
                                         r"'best_checkpoint'$"):
        load_suite("frogsgame")
