"""Judge verdicts of every era read from a run directory (spec section 3), and the effective flags.

Eras: one-line txt files (3.1, incl. the manual ``no `` flip, ``_rerun`` and per-judge variants, and the
five-file Harbor forks), ``judge_result.json`` (3.2), ``judgement_<id>.json`` (3.4). A verdict is read as
whole trimmed strings, never substrings: ``no contamination detected`` contains ``contamination detected``.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from pydantic import computed_field
from pydantic.dataclasses import dataclass

# kind -> (txt file stem, clean string, flagged string)
TXT_KINDS = {
    "contamination": ("contamination_judgement", "no contamination detected", "contamination detected"),
    "disallowed_model": ("disallowed_model_judgement", "only allowed use detected", "disallowed use detected"),
    "evaluation_access": ("evaluation_access_judgement", "no evaluation-code access detected",
                          "evaluation-code access detected"),
    "disallowed_api_usage": ("api_usage_judgement", "no external API usage detected", "external API usage detected"),
    "disallowed_ptb_lookup": ("ptb_lookup_judgement", "no benchmark lookup detected", "benchmark lookup detected"),
}
# judgement_<id>.json boolean fields (3.4) -> our kind
JSON_FIELDS = {
    "contamination": "contamination", "disallowed_model": "disallowed_model",
    "disallowed_api_usage": "disallowed_api_usage", "disallowed_ptb_lookup": "disallowed_ptb_lookup",
    "general_anomaly": "general_anomaly",
}
SCORED_KINDS = ("contamination", "disallowed_model")  # a flag on these makes the run score as its base model
_TXT_NAME = re.compile(r"^(?P<stem>[a-z_]+_judgement)(?:_(?P<judge>(?!rerun)[a-z0-9_]+?))?(?P<rerun>_rerun)?\.txt$")
_JSON_NAME = re.compile(r"^judgement_(?P<judge>[a-z0-9_]+?)(?P<rerun>_rerun)?\.json$")
_RESULT_NAME = re.compile(r"^judge_result(?P<rerun>_rerun)?\.json$")


@dataclass(frozen=True)
class Verdict:
    """One judge's decision on one question about one run.

    ``value``: clean | flagged | missing | malformed | unavailable; ``flagged`` is None unless clean/flagged.
    A pydantic dataclass: the one verdict model of the file readers, the ingest, the selectors and the API
    (``traces.schemas``); positional like the readers build it.
    """

    judge: str
    attempt: str
    era: str
    kind: str
    value: str
    flagged: bool | None
    text: str
    note: str | None
    source_file: str | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def value_text(self) -> str:
        """The value in words (VALUE_TEXT): ``malformed`` reads "unreadable judge output"."""
        return VALUE_TEXT.get(self.value, self.value)


# How each stored verdict value reads on a page: a malformed txt verdict is "unreadable judge output" (its text is
# shown beside it), as upstream's aggregation counts it (``IMPORTANT ERR``, spec 3.1).
VALUE_TEXT = {"clean": "clean", "flagged": "flagged", "missing": "missing", "malformed": "unreadable judge output",
              "unavailable": "judge unavailable"}


def read_txt_verdict(kind: str, text: str) -> tuple[str, bool | None, str | None]:
    """(value, flagged, note) of a one-line verdict file's content for ``kind`` (spec 3.1, 3.4 Harbor forms).

    The rule of upstream's aggregation (``load_contamination`` / ``load_disallowed_model`` in
    ``scripts/utils.py`` on qol_multigpu, ``aggregate_contamination.py`` on main): the whole content, trimmed of
    surrounding whitespace (Python's ``str.strip``), must equal the clean or the flagged string exactly. Anything
    else, a verdict with an appended note (``no contamination detected (judge skipped)``), another case, an
    empty file, two lines, is ``malformed`` (upstream's ``IMPORTANT ERR``: the cell scores as the base model).

    Recognised besides, with the same effect on the score (a judge error): ``judge unavailable (...)`` (Harbor
    forks) -> ``unavailable``; the trace export's placeholder ``No <file> produced.`` (spec 1.5) -> ``missing``.
    The three questions only Harbor forks ask (evaluation-code access, external API usage, benchmark lookup)
    also take their flagged form with evidence, ``<flagged string>: <evidence>``, as flagged.
    """
    _, clean, flagged = TXT_KINDS[kind]
    line = text.strip()
    if line == clean:
        return "clean", False, None
    if line == flagged:
        return "flagged", True, None
    if kind not in SCORED_KINDS and line.startswith(flagged + ": "):
        return "flagged", True, line[len(flagged) + 2:].strip()
    if line.startswith("judge unavailable ("):
        return "unavailable", None, line
    if line.startswith("No ") and line.endswith(" produced."):
        return "missing", None, line  # the published trace export's placeholder (spec 1.5)
    return "malformed", None, f"not exactly {clean!r} or {flagged!r}"


def read_verdicts(run_dir: Path, redact: Callable[[str], str] = lambda s: s,
                  readable: Callable[[Path], bool] = Path.is_file) -> list[Verdict]:
    """Every verdict file in ``run_dir`` as Verdict records, in a stable order; ``readable`` says which entries
    may be read (the ingest's: regular files inside the results root, ``traces.ingest.files``).

    A run with no verdict file at all gets ``missing`` contamination and disallowed-model verdicts (the judge
    never produced one). ``redact`` is applied to each file's raw text and again to each text decoded from a JSON
    file (a key written with ``\\uXXXX`` escapes is whole only there). Unreadable JSON becomes a ``malformed`` verdict naming the file; nothing raises.
    """
    found: list[Verdict] = []
    names = sorted(p.name for p in run_dir.iterdir() if readable(p))
    stems = {stem: kind for kind, (stem, _, _) in TXT_KINDS.items()}
    for name in names:
        path = run_dir / name
        if (m := _TXT_NAME.match(name)) and m["stem"] in stems:
            kind = stems[m["stem"]]
            text = redact(path.read_text(errors="replace"))
            value, flagged, note = read_txt_verdict(kind, text)
            found.append(Verdict(m["judge"] or "codex", "rerun" if m["rerun"] else "original", "txt", kind, value,
                                 flagged, text.strip(), note, name))
        elif m := _JSON_NAME.match(name):
            found.extend(_json_verdicts(path, m["judge"], "rerun" if m["rerun"] else "original", redact))
        elif m := _RESULT_NAME.match(name):
            found.extend(_result_verdicts(path, "rerun" if m["rerun"] else "original", redact))
    if not found:
        for kind in SCORED_KINDS:
            found.append(Verdict("codex", "original", "txt", kind, "missing", None,
                                 "The judge produced no verdict for this run.", None, None))
    else:
        have = {(v.kind, v.era) for v in found}
        if any(era == "txt" for _, era in have):
            for kind in SCORED_KINDS:
                if (kind, "txt") not in have:
                    stem = TXT_KINDS[kind][0]
                    found.append(Verdict("codex", "original", "txt", kind, "missing", None,
                                         f"{stem}.txt is missing: the judge crashed or never wrote it.", None, None))
    return found


def _load_json(path: Path, redact: Callable[[str], str]) -> dict | str:
    try:
        data = json.loads(redact(path.read_text(errors="replace")))
    except json.JSONDecodeError as exc:
        return f"{path.name}:{exc.lineno}: not valid JSON ({exc.msg})"
    return data if isinstance(data, dict) else f"{path.name}:1: not a JSON object"


def _json_verdicts(path: Path, judge: str, attempt: str, redact) -> list[Verdict]:
    data = _load_json(path, redact)
    if isinstance(data, str):
        return [Verdict(judge, attempt, "judgement_json", "contamination", "malformed", None, data, None, path.name)]
    out = []
    for field, kind in JSON_FIELDS.items():
        if field not in data:
            continue
        value = data[field]
        text = redact(str(data.get(f"justification_{field}", "")))  # decoded: a key spelled with JSON escapes
        if isinstance(value, bool):
            out.append(Verdict(judge, attempt, "judgement_json", kind, "flagged" if value else "clean", value, text,
                               None, path.name))
        else:
            out.append(Verdict(judge, attempt, "judgement_json", kind, "malformed", None, text,
                               redact(f"{field} is {value!r}, not a boolean"), path.name))
    return out


def _result_verdicts(path: Path, attempt: str, redact) -> list[Verdict]:
    data = _load_json(path, redact)
    if isinstance(data, str):
        return [Verdict("aggregate", attempt, "judge_result", "contamination", "malformed", None, data, None, path.name)]
    out = []
    for field, kind in (("contamination_detected", "contamination"), ("disallowed_model_detected", "disallowed_model"),
                        ("contamination", "contamination"), ("disallowed_model", "disallowed_model"),
                        ("disallowed_api_usage", "disallowed_api_usage")):
        if field in data and isinstance(data[field], bool):
            text = redact(str(data.get(f"justification_{kind}", "")))  # decoded text, redacted again
            out.append(Verdict("aggregate", attempt, "judge_result", kind, "flagged" if data[field] else "clean",
                               data[field], text, None, path.name))
    return out


# The third question whose "flagged" also makes a run fall back (spec 3.4 v1.1: cell letters M, C and A); a
# missing API verdict means "not judged" (runs older than that judge), not a judge error.
API_KIND = "disallowed_api_usage"


def _chosen(verdicts: list[Verdict], kind: str) -> list[Verdict]:
    """The verdicts on ``kind`` that the aggregation of the run's era reads (spec 3.1-3.4).

    In order: the original txt files (the plain ``codex`` judge's, else any judge's; ``_rerun`` files are shown
    but not read, 3.3); else ``judge_result.json`` (the migration era, and May 2026, when it held the judges'
    OR and a human's flip, 3.2/3.4; as for the txt files, ``judge_result_rerun.json`` is shown but not read:
    new_judge_v2's ``aggregate_contamination.py`` reads ``judge_result.json`` only, and adopting a rerun means
    copying it over the original); else the ``judgement_<id>.json`` files (v1.1): for
    contamination and model the canonical ``gpt5_4`` judge alone when it exists, for each judge its rerun file
    first, OR-ed over judges.
    """
    mine = [v for v in verdicts if v.kind == kind]
    txt = [v for v in mine if v.era == "txt" and v.attempt == "original"]
    if txt:
        return [v for v in txt if v.judge == "codex"] or txt
    result = [v for v in mine if v.era == "judge_result" and v.attempt == "original"]
    if result:
        return result[:1]
    by_judge: dict[str, Verdict] = {}
    for v in sorted((v for v in mine if v.era == "judgement_json"), key=lambda v: v.attempt != "rerun"):
        by_judge.setdefault(v.judge, v)
    if kind in SCORED_KINDS and "gpt5_4" in by_judge:
        return [by_judge["gpt5_4"]]
    return list(by_judge.values())


def effective_flags(verdicts: list[Verdict], overrides: dict[str, bool] | None = None) -> dict[str, str | None]:
    """Why the run falls back to its base model, per question: ``flagged``, ``judge_error`` or None.

    Keys: SCORED_KINDS (contamination, disallowed model) and ``disallowed_api_usage``. The verdicts read are
    those of the run's era (:func:`_chosen`); a missing or malformed contamination/model verdict is a judge error
    (it falls back too, spec 3.1), a missing API verdict is "not judged". A reviewer's override (kind -> flagged)
    replaces all of that for its kind.
    """
    overrides = overrides or {}
    result: dict[str, str | None] = {}
    for kind in (*SCORED_KINDS, API_KIND):
        if kind in overrides:
            result[kind] = "flagged" if overrides[kind] else None
            continue
        chosen = _chosen(verdicts, kind)
        if any(v.flagged for v in chosen):
            result[kind] = "flagged"
        elif (not chosen and kind != API_KIND) or any(v.flagged is None for v in chosen):
            result[kind] = "judge_error"
        else:
            result[kind] = None
    return result


# Each question in words, as pages head it (``disallowed_model`` -> "Disallowed model").
KIND_TEXT = {
    "contamination": "Contamination", "disallowed_model": "Disallowed model",
    "evaluation_access": "Evaluation-code access", "disallowed_api_usage": "External API usage",
    "disallowed_ptb_lookup": "Benchmark lookup", "general_anomaly": "General anomaly",
}
# An effective flag in words (:func:`flag_labels`).
FLAG_TEXT = {"flagged": "flagged", "judge_error": "judge error", "clean": "clean", "not_assessed": "not assessed"}


def kind_text(kind: str) -> str:
    """A verdict question in words (KIND_TEXT), the key with underscores as spaces when unknown."""
    return KIND_TEXT.get(kind, kind.replace("_", " ").capitalize())


def flag_labels(verdicts: list[Verdict], overrides: dict[str, bool] | None = None) -> dict[str, str]:
    """Per question of :func:`effective_flags`, how it reads: ``flagged``, ``judge_error``, ``clean`` or
    ``not_assessed`` (no verdict of the run's era answers it and no reviewer overrode it: a question the judge was
    never asked, e.g. external API usage on runs judged before that question existed). Never ``clean`` for a
    question nobody assessed."""
    overrides = overrides or {}
    labels: dict[str, str] = {}
    for kind, flag in effective_flags(verdicts, overrides).items():
        if flag:
            labels[kind] = flag
        elif kind in overrides or _chosen(verdicts, kind):
            labels[kind] = "clean"
        else:
            labels[kind] = "not_assessed"
    return labels
