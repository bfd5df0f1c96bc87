"""Secret redaction at ingest (spec 6)."""
from __future__ import annotations

import json

from ingest.redaction import PLACEHOLDER, SECRET_NAMES, Redactor

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


# --- issue 13: one test per shape family of ingest.redaction.RULES, fake keys built here -----------------------

def _key(n: int, alphabet: str = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz") -> str:
    return (alphabet * (n // len(alphabet) + 1))[:n]


def _redacts(text: str, secret: str, expected_count: int = 1) -> str:
    """Redact ``text``; the secret must be gone and the count right. Returns the redacted text."""
    out, count = Redactor().redact_counted(text)
    assert secret not in out, (secret, out)
    assert count == expected_count, (text, out, count)
    return out


def test_family_anthropic_any_infix():
    for key in ("sk-ant-" + _key(40), "sk-ant-api03-" + _key(93) + "AA", "sk-ant-admin01-" + _key(93) + "AA",
                "sk-ant-oat01-" + _key(60)):
        assert _redacts(f"key={key}\n", key) == f"key={PLACEHOLDER}\n"


def test_family_openai_short_and_project_keys():
    for key in ("sk-" + "0123456789abcdef" * 2, "sk-" + _key(20) + "T3BlbkFJ" + _key(20),
                "sk-svcacct-" + _key(30), "sk-proj-" + _key(60) + "T3BlbkFJ" + _key(58)):
        assert _redacts(f'"{key}"', key) == f'"{PLACEHOLDER}"'


def test_family_aws_access_key_ids_also_after_a_json_escape():
    for key in ("AKIA" + "IOSFODNN7EXAMPLE", "ASIA" + "Y34FZKBOKMUTVV7A"):
        assert _redacts(f"id: {key}", key) == f"id: {PLACEHOLDER}"
        # inside a raw JSON line the key follows an escaped newline: still a boundary
        assert _redacts(f'{{"out":"env\\n{key}\\n"}}', key) == f'{{"out":"env\\n{PLACEHOLDER}\\n"}}'


def test_family_aws_secret_access_keys_keep_the_variable_name():
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
    assert len(secret) == 40
    assert _redacts(f"AWS_SECRET_ACCESS_KEY={secret}\n", secret) == f"AWS_SECRET_ACCESS_KEY={PLACEHOLDER}\n"
    assert _redacts(f"aws_secret_access_key = {secret}", secret) == f"aws_secret_access_key = {PLACEHOLDER}"
    assert _redacts(f'{{\\"AwsSecretKey\\": \\"{secret}\\"}}', secret).endswith(f'{PLACEHOLDER}\\"}}')


def test_family_private_key_blocks_plain_and_json_escaped():
    body = "\n".join(_key(64) for _ in range(5))
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    assert _redacts(f"cat id_rsa\n{pem}\ndone", pem) == f"cat id_rsa\n{PLACEHOLDER}\ndone"
    escaped = pem.replace("\n", "\\n")
    line = f'{{"type":"user","content":"{escaped}\\n"}}'
    out = _redacts(line, escaped)
    assert json.loads(out) == {"type": "user", "content": PLACEHOLDER + "\n"}
    openssh = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"
    _redacts(openssh, openssh)


def test_family_slack_tokens():
    for token in ("xoxb-" + "1234567890-1234567890123-" + _key(24), "xoxp-1234567890-1234567890-1234567890-" + _key(32),
                  "xapp-1-A0123BCDEFG-1234567890123-" + "0123456789abcdef" * 4, "xoxa-2-" + _key(40)):
        assert _redacts(f"SLACK={token} ", token) == f"SLACK={PLACEHOLDER} "


def test_family_stripe_keys():
    for key in ("sk_live_" + _key(24), "rk_test_" + _key(30), "sk_prod_" + _key(12)):
        assert _redacts(f"stripe.api_key = '{key}'", key) == f"stripe.api_key = '{PLACEHOLDER}'"


def test_family_jwt():
    token = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ." + _key(43)
    assert _redacts(f"Cookie: session={token}; path=/", token) == f"Cookie: session={PLACEHOLDER}; path=/"


def test_family_google_api_keys_and_oauth_tokens():
    for key in ("AIza" + _key(35), "ya29." + _key(60)):
        assert _redacts(f"token {key}\n", key) == f"token {PLACEHOLDER}\n"


def test_family_huggingface_user_and_org_tokens():
    for key in ("hf_" + _key(34), "api_org_" + "abcdefghijklmnopqrstuvwxyzABCDEFGH"):
        assert _redacts(f"login({key!r})", key) == f"login('{PLACEHOLDER}')"


def test_family_github_tokens():
    for key in ("ghp_" + _key(36), "gho_" + _key(36), "ghs_" + _key(36), "github_pat_" + _key(82)):
        assert _redacts(f"https://{key}@github.com/x/y", key) == f"https://{PLACEHOLDER}@github.com/x/y"


def test_family_wandb_keys_after_the_word_wandb():
    key = "0123456789abcdef" * 2 + "01234567"
    assert len(key) == 40
    assert _redacts(f"export WANDB_API_KEY={key}", key) == f"export WANDB_API_KEY={PLACEHOLDER}"
    assert _redacts(f"wandb login {key}", key) == f"wandb login {PLACEHOLDER}"
    assert _redacts(f'wandb.login(key="{key}")', key) == f'wandb.login(key="{PLACEHOLDER}")'


def test_wandb_api_key_is_a_named_variable():
    assert "WANDB_API_KEY" in SECRET_NAMES
    redactor = Redactor.from_environ({"WANDB_API_KEY": "local-wandb-value-77"})
    assert redactor.redact("printed local-wandb-value-77") == f"printed {PLACEHOLDER}"


def test_family_authorization_headers_keep_the_header():
    token = _key(48)
    cmd = f'curl -s https://api.example.com -H "Authorization: Bearer {token}" -d @body.json'
    assert _redacts(cmd, token) == f'curl -s https://api.example.com -H "Authorization: Bearer {PLACEHOLDER}" -d @body.json'
    json_line = f'{{"command":"curl -H \\"authorization: Basic {token}\\" x"}}'
    assert json.loads(_redacts(json_line, token))["command"] == f'curl -H "authorization: Basic {PLACEHOLDER}" x'
    assert _redacts(f"-H 'x-api-key: {token}'", token) == f"-H 'x-api-key: {PLACEHOLDER}'"


def test_family_url_query_parameters_keep_the_name():
    for name in ("apikey", "api_key", "token", "access_token"):
        value = _key(32)
        url = f"https://api.example.com/v1/data?format=json&{name}={value}&page=2"
        assert _redacts(url, value) == f"https://api.example.com/v1/data?format=json&{name}={PLACEHOLDER}&page=2"


def test_family_secret_named_variable_assignments():
    for name in ("GITHUB_TOKEN", "MY_SERVICE_API_KEY", "DB_PASSWORD", "CLIENT_SECRET"):
        value = "v4lue-" + _key(20)
        assert _redacts(f"{name}={value}\n", value) == f"{name}={PLACEHOLDER}\n"
    assert _redacts('{"SERVICE_API_KEY": "abc123def456ghi789"}', "abc123def456ghi789") == \
        f'{{"SERVICE_API_KEY": "{PLACEHOLDER}"}}'


def test_lookalikes_of_the_new_families_survive():
    sha = "3f5e1c0b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f"
    text = "\n".join([
        "pip install scikit-learn sk-learn; risk-assessment-framework-for-model-release-2026",
        f"commit {sha}", f"git checkout {sha}", "AKIAIOSFODNN", "ASIAN markets", "MAX_NEW_TOKENS=2048",
        "HF_TOKEN=$HF_TOKEN", 'api_key=os.environ["OPENAI_API_KEY"]', "OPENAI_API_KEY=<omitted-api-key>",
        'curl -H "Authorization: Bearer $TOKEN" https://x', "https://x.org/?page=2&token=abc",
        'grep -r "BEGIN RSA PRIVATE KEY" .', "-----BEGIN RSA PRIVATE KEY-----", "eyJhbGciOi.eyJzdWIi.x",
        "xoxb-placeholder", "sk_test_short", "ya29.x", "tokenizer.pad_token = tokenizer.eos_token",
        "TOKENIZERS_PARALLELISM=false", "wandb: Tracking run with wandb version 0.19.1",
        "self.secret_key_name = 'none'", "the task-completion-with-long-identifier-name-and-more-words",
    ])
    out, count = Redactor().redact_counted(text)
    assert (out, count) == (text, 0)


def test_a_redacted_json_line_stays_valid_json():
    secrets = ["AKIA" + "IOSFODNN7EXAMPLE", "sk-ant-" + _key(40), "ghp_" + _key(36), "ya29." + _key(40)]
    event = {"type": "user", "message": {"content": [{"type": "tool_result", "content": "\n".join(
        f"K{i}={s}" for i, s in enumerate(secrets)) + '\n"quoted"\\'}]}}
    line = json.dumps(event)
    out, count = Redactor().redact_counted(line)
    assert count == len(secrets)
    content = json.loads(out)["message"]["content"][0]["content"]
    assert content == "\n".join(f"K{i}={PLACEHOLDER}" for i in range(len(secrets))) + '\n"quoted"\\'


def test_every_rule_names_its_source():
    from ingest.redaction import RULES

    assert len({r.name for r in RULES}) == len(RULES) >= 16
    for rule in RULES:
        assert rule.source and rule.patterns, rule.name


def test_the_re2_gate_lets_every_planted_secret_through_and_skips_clean_text():
    # Redactor.may_match answers False only where the pattern surely finds nothing (its relaxed RE2 form): for
    # every planted secret in its context, from every start where the pattern still finds a match, it says so.
    from tests.test_planted_secrets import ALL, KNOWN

    redactor = Redactor({"SOME_API_KEY": KNOWN})
    for family, text, _ in ALL + [("known", f"export X={KNOWN}\n", KNOWN)]:
        starts = [pos for pos in range(len(text)) if redactor.pattern.search(text, pos)]
        assert starts and all(redactor.may_match(text, pos) for pos in starts), family
        assert redactor.redact(text) != text, family
    clean = '{"type": "assistant", "message": {"content": [{"type": "text", "text": "Training loss 0.42"}]}}\n' * 50
    assert not redactor.may_match(clean) and redactor.redact_counted(clean) == (clean, 0)


# --- issue 25: decoded text, URL userinfo, values a run reveals ----------------------------------------------------

def test_url_userinfo_password_and_token_user_are_redacted_and_plain_urls_survive():
    r = Redactor()
    assert r.redact("git clone https://ci-bot:S3cretPass-word@git.example.com/org/repo.git") == \
        f"git clone https://ci-bot:{PLACEHOLDER}@git.example.com/org/repo.git"
    assert r.redact("postgres://admin:hunter2@db:5432/x") == f"postgres://admin:{PLACEHOLDER}@db:5432/x"
    assert r.redact("https://x7Zq8Xw2Vb4Nm6Lk0Jh3Gf5Dd7@github.com/org/repo") == \
        f"https://{PLACEHOLDER}@github.com/org/repo"
    for plain in ("ssh://git@github.com/org/repo", "postgres://postgres@localhost/db", "http://localhost:8080/a@b",
                  "https://example.com/users/@alice", "mailto:someone@example.com"):
        assert r.redact(plain) == plain


def test_the_rest_of_a_key_glued_to_a_placeholder_is_replaced_but_not_counted():
    r = Redactor({"X": "qz-known-value-0042xyz"})
    # the first half of a known value, alone in one delta, was replaced; the second half joins it when merged
    first, count = r.redact_counted("key qz-known-va")
    assert (first, count) == (f"key {PLACEHOLDER}", 1)
    assert r.redact_counted(first + "lue-0042xyz. done") == (f"key {PLACEHOLDER}. done", 0)


def test_decoded_text_is_searched_again_with_nested_json_escapes_resolved():
    key = "sk-ant-api03-" + _key(60)
    r = Redactor()
    nested = '{"cmd": "echo ' + key.replace("-", "\\u002d") + '"}'  # JSON text inside a decoded string
    assert key.replace("-", "\\u002d") not in r.redact_decoded(nested)[0]
    assert r.redact_decoded(nested) == ('{"cmd": "echo ' + PLACEHOLDER + '"}', 1)
    doubly = nested.replace("\\", "\\\\")  # two levels of JSON: the escape's backslash escaped again
    assert r.redact_decoded(doubly)[1] == 1
    aws = "aws_secret_access_key=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYZQ8XW2VBQQ".replace("/", "\\/")
    assert r.redact_decoded(aws) == (f"aws_secret_access_key={PLACEHOLDER}", 1)
    # escapes that spell no key are left as they are
    assert r.redact_decoded('{"path": "a\\/b", "e": "caf\\u00e9"}') == ('{"path": "a\\/b", "e": "caf\\u00e9"}', 0)


def test_redact_many_redacts_exactly_the_texts_that_hold_a_secret():
    known = "qz-known-value-0042xyz"
    r = Redactor({"X": known})
    texts = ["plain text", None, f"the key {known}", "", "https://u:pa55word@h/", "more plain text"]
    out, count = r.redact_many(texts)
    assert out == ["plain text", None, f"the key {PLACEHOLDER}", "", f"https://u:{PLACEHOLDER}@h/",
                   "more plain text"]
    assert count == 2
    assert out[0] is texts[0] and out[5] is texts[5]  # untouched texts are the same objects
    # one text per secret or not: the count is the same as redacting each alone
    many = [f"{i} {known}" if i % 7 == 0 else f"line {i}" for i in range(200)]
    assert r.redact_many(many)[1] == sum(r.redact_counted(t)[1] for t in many) == 29
    # offsets are characters: texts of many-byte characters before the secret do not shift it to another text
    wide = ["é" * 5000, "日本語" * 300, f"the key {known}", "€" * 10]
    assert r.redact_many(wide) == (["é" * 5000, "日本語" * 300, f"the key {PLACEHOLDER}", "€" * 10], 1)


def test_learn_values_finds_key_variables_a_text_assigns():
    from ingest.redaction import learn_values

    text = (b'$ env\\nHOME=/root\\nWANDB_API_KEY=9f8e7d6c5b4a0123456789abcdef0123456789ab\\nPATH=/usr/bin\n'
            b'export MY_SERVICE_TOKEN="tok-7Qp2mnbvcxzlkjhg"; {"HF_TOKEN": "hf_Zq8Xw2Vb4Nm6Lk0Jh3"}\n'
            b'HF_TOKEN=$HF_TOKEN OPENAI_API_KEY=your-key-goes-here1 EOS_TOKEN=151643 MAX_TOKENS=4096 '
            b'PAD_TOKEN=<|endoftext|> SOME_SECRET=justwordsnodigits lowercase_api_key=abc123def456ghi\n')
    found = learn_values([text[:70], text[70:]])  # an assignment across two blocks
    assert found == {"WANDB_API_KEY": "9f8e7d6c5b4a0123456789abcdef0123456789ab",
                     "MY_SERVICE_TOKEN": "tok-7Qp2mnbvcxzlkjhg", "HF_TOKEN": "hf_Zq8Xw2Vb4Nm6Lk0Jh3"}
    r = Redactor().with_known(found)
    assert r.redact("netrc: password tok-7Qp2mnbvcxzlkjhg") == f"netrc: password {PLACEHOLDER}"
    assert Redactor().with_known({}).values == []
