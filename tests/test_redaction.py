"""Secret redaction at ingest (spec 6)."""
from __future__ import annotations

from traces.redaction import PLACEHOLDER, Redactor

OPENAI = "sk-proj-Abc123_DEF-456ghiJKL789mnoPQR"
HF = "hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa98"
ENV = {
    "OPENAI_API_KEY": OPENAI,
    "BEN_HF_TOKEN": HF,
    "ZAI_API_KEY": "short",  # under 8 characters: skipped
    "GEMINI_API_KEY": "your-gemini-key",  # template placeholder: skipped
    "MY_OTHER_API_KEY": "zz-custom-secret-value.42",
    "PATH": "/usr/bin:/bin",
}


def test_from_environ_keeps_usable_known_values():
    redactor = Redactor.from_environ(ENV)
    assert redactor.values == [OPENAI, HF, "zz-custom-secret-value.42"]  # longest first


def test_known_values_are_redacted_even_inside_words():
    redactor = Redactor.from_environ(ENV)
    text = f"openai {OPENAI}\nexport TOKEN={HF};\nkey=zz-custom-secret-value.42!"
    assert redactor.redact(text) == f"openai {PLACEHOLDER}\nexport TOKEN={PLACEHOLDER};\nkey={PLACEHOLDER}!"


def test_a_partial_key_is_redacted():
    redactor = Redactor({"ANTHROPIC_API_KEY": "zq-9Kd7Lm2Pq4Rs6Tu8Vw0Xy"})
    # the first 10 characters plus at least one more key character; exactly 10 is not enough
    assert redactor.redact("printed zq-9Kd7Lm2PqXXXX and zq-9Kd7Lm2.") == f"printed {PLACEHOLDER} and zq-9Kd7Lm2."


def test_each_key_shape_is_redacted_without_known_values():
    redactor = Redactor()
    planted = [
        "sk-proj-" + "a1B2" * 5,
        "sk-ant-api03-" + "x" * 40,
        "sk-ant-oat01-" + "Y_z-" * 5,
        "AIzaSy" + "D" * 33,
        "sk-or-v1-" + "0f" * 32,
        "hf_" + "Ab1" * 10,
        "sk-" + "q" * 48,
        "ghp_" + "R" * 36,
        "github_pat_11ABCDEFG0123456789_" + "z" * 59,
    ]
    for key in planted:
        assert redactor.redact(f"value: {key} end") == f"value: {PLACEHOLDER} end", key


def test_lookalikes_are_left_alone():
    redactor = Redactor()
    text = ("no contamination found; task-" + "a" * 45 + " use_hf_" + "b" * 30 + " sk-short hf_tiny "
            "sk-ant-api03-short AIzaSyShort")
    assert redactor.redact(text) == text


def test_residual_prefixes_are_reported_with_context():
    redactor = Redactor()
    text = redactor.redact("ok " * 20 + "leaked sk-ant-api03-short here " + "ok " * 20)
    warnings = redactor.residual_warnings(text)
    assert warnings == [f"sk-ant at offset 67: {text[42:92]}"]
    assert "sk-ant-api03-short" in warnings[0]
    assert redactor.residual_warnings(redactor.redact("sk-proj-" + "a" * 30)) == []
