"""Planted fake secrets of every shape family never leave ingest unredacted (issue 13).

One run carries fake keys of every family of ``ingest.redaction.RULES`` (and a known value from the
environment) in its agent trace (commands, tool outputs with JSON escapes, an output far past the 256 KiB cap),
its judge trace, its prompt and a judge's verdict text. It is ingested into a plain DuckDB file and into DuckLake
(SQLite catalog, Parquet data); then the raw bytes of every warehouse file, every page (anonymous and staff), the
API and the static export are searched for each secret. Storage compression is switched off for the warehouse
files (DuckDB's FSST and Parquet's codecs would hide plain text from a byte search): a canary string planted
beside the secrets must be found in those same bytes, so a clean search means something.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from ptbsite import warehouse
from traces import layout, selectors
from ingest.redaction import PLACEHOLDER, RULES, Redactor
from ingest.tree import ingest_tree

METHOD = "claude_claude-opus-4-6_10h_run1"
RUN_DIR = "gsm8k_Qwen_Qwen3-1.7B-Base_17000001"
CANARY = "CANARY-7f3a9c-NOT-A-SECRET"
KNOWN = "qz-known-value-from-env-0042xyz"  # no shape of its own: only the environment knows it is a secret


def _k(n: int, alphabet: str = "Zq8Xw2Vb4Nm6Lk0Jh3Gf5Dd7Sa9Pe1Rt") -> str:
    return (alphabet * (n // len(alphabet) + 1))[:n]


PEM_BODY = "\n".join(_k(64) for _ in range(6))
# family -> (how the secret appears in a command or output, the secret itself)
PLANTED: dict[str, list[tuple[str, str]]] = {
    "anthropic": [("key {}", "sk-ant-" + _k(44)),
                  ("{}", "sk-ant-api03-" + _k(93) + "AA")],
    "openai": [("OPENAI={}", "sk-" + "0123456789abcdef" * 2), ("{}", "sk-proj-" + _k(48))],
    "openrouter": [("{}", "sk-or-v1-" + "0f1e2d3c" * 8)],
    "aws_access_key_id": [("env\n{}", "AKIA" + "QWERTY2345ZXCVBN"), ("id={}", "ASIA" + "MNBV7654LKJH3210")],
    "aws_secret_access_key": [("AWS_SECRET_ACCESS_KEY={}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "ZQ8XW2VB4N")],
    "private_key": [("{}", f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----")],
    "slack": [("SLACK {}", "xoxb-" + "1234567890-1234567890123-" + _k(24))],
    "stripe": [("stripe {}", "sk_live_" + _k(24))],
    "jwt": [("token {}", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + _k(43))],
    "google": [("{}", "AIza" + _k(35)), ("gcloud {}", "ya29." + _k(70))],
    "huggingface": [("login {}", "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNmPoIuYtRe")],
    "github": [("{}", "ghp_" + _k(36)), ("git {}", "github_pat_" + _k(82))],
    "wandb": [("export WANDB_API_KEY={}", "9f8e7d6c5b4a" + "0123456789abcdef0123456789ab")],
    "auth_header": [('curl -H "Authorization: Bearer {}" https://api.example.com', _k(48))],
    "url_param": [("https://api.example.com/v1?format=json&apikey={}&x=1", _k(32))],
    "env_assignment": [("GITHUB_TOKEN={}", "gh-ent-" + _k(30) + "9")],
    "url_userinfo": [("git clone https://ci-bot:{}@git.example.com/org/repo.git", "Pw" + _k(22)),
                     ("git clone https://{}@github.com/org/repo", "x7" + _k(26))],
}
assert set(PLANTED) == {r.name for r in RULES}, "one planted secret per shape family at least"
ALL = [(family, context.format(secret), secret) for family, items in PLANTED.items() for context, secret in items]
SECRETS = [secret for _, _, secret in ALL] + [KNOWN]


def _j(event: dict) -> str:
    return json.dumps(event, separators=(",", ":"))


def _trace() -> tuple[str, int]:
    """The agent trace (Claude Code stream-json) and how many secrets it holds."""
    lines = ['{"type":"system","subtype":"init","model":"claude-opus-4-6","session_id":"s"}']
    count = 0
    for i, (family, text, _) in enumerate(ALL):
        call = f"toolu_{i}"
        lines.append(_j({"type": "assistant", "message": {"id": f"m{i}", "content": [
            {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"echo {family}: {text}"}}]}}))
        lines.append(_j({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": call, "content": f"{CANARY} {family}\n{text}\nok"}]}}))
        count += 2
    # a huge output: the cap cuts it at 256 KiB, the secrets sit past the cut, in the compressed whole text
    filler = "epoch 1 step 10 loss 0.5\n" * 20_000
    lines.append(_j({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_0",
        "content": filler + f"{CANARY}\n" + "\n".join(text for _, text, _ in ALL) + f"\nopenai {KNOWN}"}]}}))
    count += len(ALL) + 1
    lines.append(_j({"type": "assistant", "message": {"id": "mk", "content": [
        {"type": "text", "text": f"The key is {KNOWN}, do not share."}]}}))
    count += 1
    lines.append('{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":1.0}')
    return "\n".join(lines) + "\n", count


def _judge_trace() -> tuple[str, int]:
    events = [{"type": "thread.started", "thread_id": "j"}, {"type": "turn.started"}]
    for i, (_, text, _) in enumerate(ALL):
        events.append({"type": "item.completed", "item": {"id": f"item_{i}", "type": "command_execution",
                                                          "command": "bash -lc 'cat ../solve_out.txt'",
                                                          "aggregated_output": text, "exit_code": 0,
                                                          "status": "completed"}})
    events.append({"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 1}})
    return "\n".join(_j(e) for e in events) + "\n", len(ALL)


def _write_tree(root: Path) -> int:
    """The results tree; returns the number of secrets planted in it."""
    path = root / METHOD / RUN_DIR
    path.mkdir(parents=True)
    trace, n_trace = _trace()
    judge, n_judge = _judge_trace()
    (path / "solve_out.txt").write_text(trace)
    (path / "judge_output.json").write_text(judge)
    (path / "prompt.txt").write_text(f"Train the model. Use {ALL[0][1]} and {ALL[-1][1]}.\n")
    (path / "contamination_judgement.txt").write_text(f"no contamination detected; the agent printed {ALL[5][1]}\n")
    (path / "disallowed_model_judgement.txt").write_text("only allowed use detected\n")
    (path / "time_taken.txt").write_text("05:00:00\n")
    (path / "metrics.json").write_text('{"accuracy": 0.4}')
    return n_trace + n_judge + 2 + 1


def _probes(secret: str) -> set[str]:
    """The secret, as JSON may escape it, each of its lines, and its middle 20 characters (a partial leak)."""
    probes = {secret, secret.replace("\n", "\\n"), secret.replace("/", "\\/")}
    probes.update(line for line in secret.split("\n") if len(line) >= 20)
    if len(secret) >= 24:
        probes.add(secret[len(secret) // 2 - 10:len(secret) // 2 + 10])
    return probes


PROBES = {secret: _probes(secret) for secret in SECRETS}


def _assert_clean(where: str, data: bytes) -> None:
    for secret, probes in PROBES.items():
        for probe in probes:
            assert probe.encode() not in data, (where, secret[:24], probe)


def _files(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.rglob("*")) if p.is_file()]


@pytest.fixture
def uncompressed(monkeypatch):
    """Warehouse connections that store strings uncompressed (plain DuckDB: ``force_compression``), so that the
    raw bytes of the file can be searched. This configures the real storage engine; it replaces nothing."""
    real_open = warehouse.connections._open

    def open_uncompressed(text: str):
        con = real_open(text)
        if not warehouse.parse_spec(text).is_ducklake:
            con.execute("SET force_compression = 'uncompressed'")
        return con

    monkeypatch.setattr(warehouse.connections, "_open", open_uncompressed)


def _ingest(root: Path, spec: str, settings) -> str:
    settings.PTB_WAREHOUSE = spec
    warehouse.reset_migration_cache()
    if warehouse.parse_spec(spec).is_ducklake:
        with warehouse.connect() as con:  # migrates, then: Parquet files written without a codec
            con.execute(f"CALL {warehouse.ALIAS}.set_option('parquet_compression', 'uncompressed')")
    redactor = Redactor.from_environ({"OPENAI_API_KEY": KNOWN})
    report = ingest_tree(root=root, redactor=redactor)
    assert (report.stored, report.failed) == (1, 0), report.problems
    warehouse.close_connections()
    return layout.run_id(METHOD, RUN_DIR)


@pytest.mark.django_db
def test_planted_secrets_of_every_family_never_leave_ingest(tmp_path, settings, uncompressed, published_warehouse):
    import shutil

    root = tmp_path / "results"
    planted = _write_tree(root)

    # --- the warehouse files, byte by byte -----------------------------------------------------------------------
    plain = tmp_path / "plain" / "warehouse.duckdb"
    plain.parent.mkdir()
    shutil.copy(published_warehouse, plain)  # the published leaderboard, for the pages that quote it
    run_id = _ingest(root, str(plain), settings)
    lake = tmp_path / "lake"
    _ingest(root, f"ducklake:sqlite:{lake / 'catalog.sqlite'}?data={lake / 'data'}", settings)
    parquet = [p for p in _files(lake / "data") if p.suffix == ".parquet"]
    assert parquet
    for files, what in ((_files(plain.parent), "duckdb"), (parquet, "parquet"), (_files(lake), "ducklake")):
        data = b"".join(p.read_bytes() for p in files)
        assert CANARY.encode() in data and PLACEHOLDER.encode() in data, f"{what}: the byte search sees no text"
        _assert_clean(what, data)

    # --- the count, on the run page and in the API ------------------------------------------------------------------
    settings.PTB_WAREHOUSE = str(plain)
    warehouse.reset_migration_cache()
    assert selectors.run_texts(run_id).secrets_redacted == planted
    anonymous, staff = Client(), Client()
    staff.force_login(get_user_model().objects.create_user("reviewer", is_staff=True))
    assert anonymous.get(f"/api/runs/{run_id}").json()["secrets_redacted"] == planted
    assert f"{planted} secrets redacted" in anonymous.get(f"/runs/{run_id}/").content.decode()

    # --- every page and API answer that shows the run ------------------------------------------------------------
    big = next(s for s in selectors.steps_page(run_id, limit=500).steps if s.output_not_shown)
    urls = ["/", "/runs/", "/analysis/", "/plots/", f"/runs/{run_id}/", f"/runs/{run_id}/?limit=500",
            f"/runs/{run_id}/?trace=judge:codex&limit=500", f"/runs/{run_id}/steps?limit=500",
            f"/runs/{run_id}/steps?limit=500&trace=judge:codex", f"/runs/{run_id}/?q=omitted",
            "/api/runs", f"/api/runs/{run_id}", f"/api/runs/{run_id}/steps?limit=500",
            f"/api/runs/{run_id}/steps?limit=500&trace=judge:codex", f"/api/runs/{run_id}/facets",
            f"/api/runs/{run_id}/timeline", "/api/leaderboard?source=runs"]
    for field in ("input", "output"):
        offset = 0
        while offset is not None:  # the whole text of the capped output, range by range
            urls.append(f"/runs/{run_id}/steps/{big.index}/text?field={field}&offset={offset}")
            answer = anonymous.get(f"/api/runs/{run_id}/steps/{big.index}/text?field={field}&offset={offset}").json()
            urls.append(f"/api/runs/{run_id}/steps/{big.index}/text?field={field}&offset={offset}")
            offset = answer["next_offset"]
    whole = anonymous.get(f"/runs/{run_id}/steps/{big.index}/text?field=output&offset=0").content.decode()
    assert CANARY in whole and whole.count(PLACEHOLDER) >= len(ALL)  # the secrets past the cut, redacted
    for client, who in ((anonymous, "anonymous"), (staff, "staff")):
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, (who, url, response.status_code)
            _assert_clean(f"{who} {url}", response.content)

    # --- the static export -----------------------------------------------------------------------------------------
    from export.exporter import export_site

    out = tmp_path / "site"
    export_site(out)
    exported = _files(out)

    def read(path: Path) -> bytes:  # the search index's files (Pagefind's) are gzip: their text, uncompressed
        data = path.read_bytes()
        return gzip.decompress(data) if path.suffix in (".pf_fragment", ".pf_index", ".pf_filter", ".pf_meta") else data

    data = b"".join(read(p) for p in exported)
    assert CANARY.encode() in data and (out / f"runs/{run_id}/index.html").is_file()
    # the search index holds each step's whole text, the part past the display cap too
    assert data.count(PLACEHOLDER.encode()) > b"".join(p.read_bytes() for p in exported).count(PLACEHOLDER.encode())
    for path in exported:
        _assert_clean(f"export {path.relative_to(out)}", read(path))



# --- decoded forms (issue 25) ----------------------------------------------------------------------------------------
# Each secret is written so that no rule matches its raw bytes (a JSON escape inside it, or split across two
# streamed deltas): only the pass over decoded, merged text can find it. WANDB_VALUE is the known value of
# WANDB_API_KEY in the ingest's environment, with no shape a rule knows.
WANDB_VALUE = "5be1" + "c0ffee0123456789abcdef0123456789ab"[:36]
# The value of a key variable that only the run itself reveals (an `env` dump in its judge's trace): no shape,
# unknown to the ingest's environment.
LEARNED_VALUE = "lrn-7Qp2" + _k(20, "mnbvcxzlkjhgfdsa")
DECODED: dict[str, str] = {
    "anthropic": "sk-ant-api03-" + _k(93) + "AA",
    "huggingface": "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNmPoIuYtRp",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "ZQ8XW2VBQQ",
    "github_url": "ghp_" + _k(36, "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz"),
    "db_password": "Tr0ub4dor-" + _k(14, "plmoknijbuhvygc"),
    "wandb": WANDB_VALUE,
    "learned": LEARNED_VALUE,
}
DECODED_CANARY = "CANARY-25d-NOT-A-SECRET"


def _esc_all(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


def _esc_sep(text: str) -> str:
    return text.replace("-", "\\u002d").replace("_", "\\u005f")


def _esc_slash(text: str) -> str:
    return text.replace("/", "\\/")


def _spelled(name: str, secret: str) -> list[str]:
    """How a secret is written inside a JSON string of a raw line: every character escaped, only ``-``/``_``
    escaped (a key with neither is left out), ``/`` escaped (a value holding ``/``)."""
    forms = [_esc_all(secret)]
    if "-" in secret or "_" in secret:
        forms.append(_esc_sep(secret))
    if "/" in secret:
        forms.append(_esc_slash(secret))
    return forms


def _contexts(name: str, written: str, slash: str = "\\/") -> str:
    """The text around a written secret: the context a rule with context needs (the value alone otherwise);
    ``slash``: how a ``/`` of the context is written."""
    if name == "aws_secret":
        return f"aws_secret_access_key={written}"
    if name == "github_url":
        return f"git clone https:{slash}{slash}{written}@github.com{slash}org{slash}repo"
    if name == "db_password":
        return f"psql postgres:{slash}{slash}admin:{written}@db.internal:5432{slash}ptb"
    return f"the key is {written} ok"


def _split(name: str, secret: str) -> tuple[str, str]:
    """The secret in its context (plain text), cut in two in the middle of the secret."""
    text = _contexts(name, secret, "/")
    cut = text.index(secret) + len(secret) // 2
    return text[:cut], text[cut:]


DECODED_WRITTEN = [(name, _contexts(name, form)) for name, secret in DECODED.items() for form in _spelled(name, secret)]


def _line(event: dict, slots: dict[str, str]) -> str:
    """``event`` as one JSON line, each ``@@key@@`` string replaced by its raw JSON spelling (escapes kept)."""
    line = _j(event)
    for key, raw in slots.items():
        line = line.replace(f"@@{key}@@", raw)
    return line


def _decoded_claude_trace() -> str:
    """A Claude Code trace with every written form in assistant text, a tool input (also nested: a JSON string
    inside the input, escapes doubled), a tool result."""
    lines = ['{"type":"system","subtype":"init","model":"claude-opus-4-6","session_id":"s"}']
    for i, (_, written) in enumerate(DECODED_WRITTEN):
        nested = written.replace("\\", "\\\\")
        slots = {"w": written, "n": nested}
        lines.append(_line({"type": "assistant", "message": {"id": f"m{i}", "content": [
            {"type": "text", "text": f"{DECODED_CANARY} @@w@@"},
            {"type": "tool_use", "id": f"toolu_{i}", "name": "Write",
             "input": {"file_path": "/app/cfg.json", "content": "{\\\"k\\\": \\\"@@n@@\\\"}",
                       "description": "@@w@@"}}]}}, slots))
        lines.append(_line({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"{DECODED_CANARY} @@w@@"}]}}, slots))
    lines.append('{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":1.0}')
    return "\n".join(lines) + "\n"


def _gemini_trace() -> str:
    """Gemini stream-json: each secret split across two ``delta: true`` messages (merged into one step)."""
    lines = [_j({"type": "init", "timestamp": "2026-04-05T10:00:00Z", "session_id": "g", "model": "gemini-2.5-pro"})]
    for name, secret in DECODED.items():
        first, second = _split(name, secret)
        for piece in (f"{DECODED_CANARY} {first}", f"{second} done"):
            lines.append(_j({"type": "message", "timestamp": "2026-04-05T10:00:01Z", "role": "assistant",
                             "content": piece, "delta": True}))
        lines.append(_j({"type": "tool_use", "timestamp": "2026-04-05T10:00:02Z", "tool_name": "run_shell_command",
                         "tool_id": "t", "parameters": {"command": "true"}}))
    lines.append(_j({"type": "result", "timestamp": "2026-04-05T10:00:03Z", "status": "success",
                     "stats": {"input_tokens": 1, "output_tokens": 1}}))
    return "\n".join(lines) + "\n"


def _codex_protocol_trace() -> str:
    """Legacy codex protocol: each secret split across two ``agent_message_delta`` events, and across two
    ``exec_command_output_delta`` chunks of a command's output (the second written as byte values)."""
    lines = [_j({"model": "gpt-5-codex", "provider": "openai"}),
             _j({"id": "0", "msg": {"type": "session_configured", "session_id": "c", "model": "gpt-5-codex"}}),
             _j({"id": "1", "msg": {"type": "task_started"}})]
    for name, secret in DECODED.items():
        first, second = _split(name, secret)
        lines.append(_j({"id": "1", "msg": {"type": "agent_message_delta", "delta": f"{DECODED_CANARY} {first}"}}))
        lines.append(_j({"id": "1", "msg": {"type": "agent_message_delta", "delta": f"{second} end"}}))
        lines.append(_j({"id": "1", "msg": {"type": "exec_command_begin", "call_id": "c1", "command": ["true"]}}))
        # the command's output streamed in two chunks, the second as a list of byte values (merged into one output)
        lines.append(_j({"id": "1", "msg": {"type": "exec_command_output_delta", "call_id": "c1", "stream": "stdout",
                                            "chunk": f"{DECODED_CANARY} {first}"}}))
        lines.append(_j({"id": "1", "msg": {"type": "exec_command_output_delta", "call_id": "c1", "stream": "stdout",
                                            "chunk": list(f"{second}\n".encode())}}))
        lines.append(_j({"id": "1", "msg": {"type": "exec_command_end", "call_id": "c1", "exit_code": 0}}))
    lines.append(_j({"id": "1", "msg": {"type": "task_complete"}}))
    return "\n".join(lines) + "\n"


def _decoded_judge_trace() -> str:
    events = [_j({"type": "thread.started", "thread_id": "j"}), _j({"type": "turn.started"}),
              _j({"type": "item.completed", "item": {"id": "env", "type": "command_execution", "command": "env",
                  "aggregated_output": f"HOME=/root\nSERVICE_API_KEY={LEARNED_VALUE}\nPATH=/usr/bin",
                  "exit_code": 0, "status": "completed"}})]
    for i, (_, written) in enumerate(DECODED_WRITTEN):
        events.append(_line({"type": "item.completed", "item": {
            "id": f"item_{i}", "type": "command_execution", "command": "bash -lc 'cat ../solve_out.txt'",
            "aggregated_output": f"{DECODED_CANARY} @@w@@", "exit_code": 0, "status": "completed"}},
            {"w": written}))
    events.append(_j({"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 1}}))
    return "\n".join(events) + "\n"


DECODED_RUNS = {"gsm8k_Qwen_Qwen3-1.7B-Base_25000001": "claude", "gsm8k_Qwen_Qwen3-1.7B-Base_25000002": "gemini",
                "gsm8k_Qwen_Qwen3-1.7B-Base_25000003": "codex"}


def _write_decoded_tree(root: Path) -> None:
    everything = " | ".join(written for _, written in DECODED_WRITTEN)
    for run_dir, kind in DECODED_RUNS.items():
        path = root / METHOD / run_dir
        path.mkdir(parents=True)
        trace = {"claude": _decoded_claude_trace, "gemini": _gemini_trace, "codex": _codex_protocol_trace}[kind]()
        (path / "solve_out.txt").write_text(trace)
        (path / "judge_output.json").write_text(_decoded_judge_trace())
        # the judge's verdicts as JSON (decoded texts), a metrics note, the prompt (plain text: the raw pass)
        (path / "judgement_codex.json").write_text(
            '{"contamination": false, "justification_contamination": "' + DECODED_CANARY + " " + everything + '", '
            '"disallowed_model": false, "justification_disallowed_model": "fine"}')
        (path / "metrics.json").write_text('{"accuracy": 0.4, "note": "' + DECODED_CANARY + " " + everything + '"}')
        (path / "prompt.txt").write_text(f"Train the model. {DECODED_CANARY}\n")
        (path / "time_taken.txt").write_text("05:00:00\n")


def _decoded_probes() -> dict[str, set[str]]:
    probes: dict[str, set[str]] = {}
    for name, secret in DECODED.items():
        forms = {secret, secret[len(secret) // 2 - 10:len(secret) // 2 + 10], *_spelled(name, secret)}
        probes[secret] = {f for f in forms if len(f) >= 16}
    return probes


def _assert_no_decoded(where: str, data: bytes, probes: dict[str, set[str]]) -> None:
    for secret, forms in probes.items():
        for probe in forms:
            assert probe.encode() not in data, (where, secret[:16], probe[:40])


@pytest.mark.django_db
def test_secrets_in_decoded_forms_never_leave_ingest(tmp_path, settings, uncompressed, published_warehouse):
    """Every secret of :data:`DECODED`, written with JSON escapes (whole or only ``-``/``_``; ``\\/``), as a
    URL's userinfo, nested one JSON level deeper in a tool input, or split across two streamed deltas (Gemini
    ``delta: true``, codex ``agent_message_delta``), in assistant text, tool inputs and outputs, the judge's
    trace, its verdict JSON and a metrics.json note: none is in the warehouse files, a page, the API or the
    static export with its Pagefind index."""
    import shutil

    from export.exporter import export_site

    root = tmp_path / "results"
    _write_decoded_tree(root)
    plain = tmp_path / "plain" / "warehouse.duckdb"
    plain.parent.mkdir()
    shutil.copy(published_warehouse, plain)
    settings.PTB_WAREHOUSE = str(plain)
    warehouse.reset_migration_cache()
    report = ingest_tree(root=root, redactor=Redactor.from_environ({"WANDB_API_KEY": WANDB_VALUE}))
    assert (report.stored, report.failed) == (len(DECODED_RUNS), 0), report.problems
    warehouse.close_connections()
    probes = _decoded_probes()
    lake = tmp_path / "lake"
    settings.PTB_WAREHOUSE = f"ducklake:sqlite:{lake / 'catalog.sqlite'}?data={lake / 'data'}"
    warehouse.reset_migration_cache()
    with warehouse.connect() as con:  # migrates, then: Parquet files written without a codec
        con.execute(f"CALL {warehouse.ALIAS}.set_option('parquet_compression', 'uncompressed')")
    report = ingest_tree(root=root, redactor=Redactor.from_environ({"WANDB_API_KEY": WANDB_VALUE}))
    assert (report.stored, report.failed) == (len(DECODED_RUNS), 0), report.problems
    warehouse.close_connections()
    for files, what in ((_files(plain.parent), "duckdb"), (_files(lake), "ducklake")):
        data = b"".join(p.read_bytes() for p in files)
        assert DECODED_CANARY.encode() in data and PLACEHOLDER.encode() in data, f"{what}: the byte search sees no text"
        _assert_no_decoded(what, data, probes)
    settings.PTB_WAREHOUSE = str(plain)

    warehouse.reset_migration_cache()
    anonymous, staff = Client(), Client()
    staff.force_login(get_user_model().objects.create_user("reviewer25", is_staff=True))
    urls = ["/", "/runs/", "/analysis/", "/api/runs", "/api/leaderboard?source=runs"]
    for run_dir, kind in DECODED_RUNS.items():
        run_id = layout.run_id(METHOD, run_dir)
        texts = selectors.run_texts(run_id)
        # every written form is a secret replaced at least once, in the trace, the judge's trace and its verdict
        assert texts.secrets_redacted >= len(DECODED) + 2 * len(DECODED_WRITTEN), (kind, texts.secrets_redacted)
        steps = anonymous.get(f"/api/runs/{run_id}/steps?limit=500").json()
        shown = json.dumps(steps)
        assert DECODED_CANARY in shown and PLACEHOLDER in shown, kind
        urls += [f"/runs/{run_id}/", f"/runs/{run_id}/?limit=500", f"/runs/{run_id}/?trace=judge:codex&limit=500",
                 f"/runs/{run_id}/steps?limit=500", f"/runs/{run_id}/?q=omitted", f"/api/runs/{run_id}",
                 f"/api/runs/{run_id}/steps?limit=500", f"/api/runs/{run_id}/steps?limit=500&trace=judge:codex",
                 f"/api/runs/{run_id}/facets", f"/api/runs/{run_id}/timeline"]
        for step in steps["steps"]:
            for field in ("input", "output"):
                urls.append(f"/runs/{run_id}/steps/{step['index']}/text?field={field}&offset=0")
    for client, who in ((anonymous, "anonymous"), (staff, "staff")):
        for url in urls:
            response = client.get(url)
            assert response.status_code in (200, 404), (who, url, response.status_code)
            _assert_no_decoded(f"{who} {url}", response.content, probes)

    out = tmp_path / "site"
    export_site(out)
    exported = _files(out)

    def read(path: Path) -> bytes:
        data = path.read_bytes()
        return gzip.decompress(data) if path.suffix in (".pf_fragment", ".pf_index", ".pf_filter", ".pf_meta") else data

    assert DECODED_CANARY.encode() in b"".join(read(p) for p in exported)
    assert any(p.suffix == ".pf_fragment" for p in exported), "the export has no Pagefind index"
    for path in exported:
        _assert_no_decoded(f"export {path.relative_to(out)}", read(path), probes)
