"""Planted fake secrets of every shape family never leave ingest unredacted (issue 13).

One run carries fake keys of every family of ``traces.redaction.RULES`` (and a known value from the
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
from traces.redaction import PLACEHOLDER, RULES, Redactor
from traces.ingest import ingest_tree

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
