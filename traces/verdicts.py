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
from ptbsite import jsontext

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
    may be read (the ingest's: regular files inside the results root, ``ingest.files``).

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
        data = jsontext.loads(redact(path.read_text(errors="replace")))
    except jsontext.TooDeep as exc:
        return f"{path.name}:1: not read ({exc})"
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


# judge_result.json's keys by writer: upstream's aggregate_judgement.py (new_judge_v2, May 2026; the keys
# aggregate_contamination.py requires as booleans, and the API judge's key it copies) and the migration script
# (migrate_judgement_files.py, Feb-Mar 2026, spec 3.2).
RESULT_KEYS = (("contamination", "contamination"), ("disallowed_model", "disallowed_model"))
RESULT_API_KEY = ("disallowed_api_usage", "disallowed_api_usage")
MIGRATION_KEYS = (("contamination_detected", "contamination"), ("disallowed_model_detected", "disallowed_model"))
AGGREGATE_JUDGE = "aggregate"    # judge_result.json written by aggregate_judgement.py
MIGRATION_JUDGE = "migration"    # judge_result.json written by the migration script


def _result_verdicts(path: Path, attempt: str, redact) -> list[Verdict]:
    """judge_result.json's verdicts. The migration's file (``*_detected`` keys, judge ``migration``) gives one
    verdict per boolean key it has. aggregate_judgement.py's file (judge ``aggregate``) gives one per scored key,
    ``malformed`` when the key is missing or not a JSON boolean (``"false"`` as a string): upstream's
    aggregate_contamination.py reads such a key as ``IMPORTANT ERR``; and the API judge's key when present."""
    data = _load_json(path, redact)
    if isinstance(data, str):
        return [Verdict(AGGREGATE_JUDGE, attempt, "judge_result", kind, "malformed", None, data, None, path.name)
                for kind in SCORED_KINDS]
    migrated = any(key in data for key, _ in MIGRATION_KEYS) and not any(key in data for key, _ in RESULT_KEYS)
    judge = MIGRATION_JUDGE if migrated else AGGREGATE_JUDGE
    out = []
    for field, kind in (MIGRATION_KEYS if migrated else (*RESULT_KEYS, RESULT_API_KEY)):
        text = redact(str(data.get(f"justification_{kind}", "")))  # decoded text, redacted again
        if field in data and isinstance(data[field], bool):
            out.append(Verdict(judge, attempt, "judge_result", kind, "flagged" if data[field] else "clean",
                               data[field], text, None, path.name))
        elif not migrated and (field in data or kind in SCORED_KINDS):
            note = f"{field} is {data[field]!r}, not a boolean" if field in data else f"{field} is missing"
            out.append(Verdict(judge, attempt, "judge_result", kind, "malformed", None, text, note, path.name))
    return out


# The third question whose "flagged" also makes a run fall back (spec 3.4 v1.1: cell letters M, C and A); a
# missing API verdict means "not judged" (runs older than that judge), not a judge error.
API_KIND = "disallowed_api_usage"
# The questions a reviewer can override: those whose flag makes a run fall back (:func:`effective_flags`' keys).
OVERRIDABLE_KINDS = (*SCORED_KINDS, API_KIND)


# May-2026 second contamination judges (spec 3.4): a run judged by one of them belongs to new_judge_v2's era, whose
# aggregation reads judge_result.json only; v1.1 (``src/judges/``) judges: their files are read directly.
MAY_JUDGES = frozenset({"kimi", "sonnet4_6", "deepseek", "deepseek_v4_flash"})
V11_JUDGES = frozenset({"ptb_lookup", "general"})
CANONICAL_JUDGE = "gpt5_4"
API_JUDGE = "api"


@dataclass(frozen=True)
class VerdictRule:
    """How one judge era's verdicts combine into the flags that decide the score, as upstream's code of that era
    does (spec 3.1-3.4; README "Judging rules"). ``id``: txt | judge_result | judge_result_missing | migration |
    judgement_json | none; ``text``: the rule in words; ``source``: the upstream code it follows."""

    id: str
    text: str
    source: str


RULES = {
    "txt": VerdictRule(
        "txt", "the one-line verdict files contamination_judgement.txt and disallowed_model_judgement.txt, each "
        "exactly its clean or flagged string (anything else is a judge error); *_rerun files are shown, not read",
        "main / qol_multigpu scripts (load_contamination, load_disallowed_model)"),
    "judge_result": VerdictRule(
        "judge_result", "judge_result.json, the OR of the contamination judges written by aggregate_judgement.py; "
        "a missing or non-boolean contamination or disallowed_model is a judge error; its API judge's flag counts "
        "too (a difference: upstream's May aggregation ignores it); the txt files, if any, are not read",
        "new_judge_v2 scripts/aggregate_contamination.py (load_judge_result)"),
    "judge_result_missing": VerdictRule(
        "judge_result_missing", "per-judge judgement_<id>.json files of the May-2026 judges but no judge_result.json: "
        "aggregate_judgement.py fails when a judge's file is missing or malformed and writes nothing, so the "
        "aggregation has no verdict (ERR): a judge error; each judge's verdict is shown",
        "new_judge_v2 src/disallowed_usage_judge/aggregate_judgement.py + scripts/aggregate_contamination.py"),
    "migration": VerdictRule(
        "migration", "judge_result.json of the migration script (contamination_detected, disallowed_model_detected) "
        "when no txt file is left (a difference: upstream's aggregation never reads these keys)",
        "scripts/migrate_judgement_files.py (main)"),
    "judgement_json": VerdictRule(
        "judgement_json", "v1.1: judgement_gpt5_4.json alone for contamination and model, judgement_api.json for "
        "external API use, each judge's _rerun file first",
        "v1.1 src/judges/ (spec 3.4)"),
    "none": VerdictRule("none", "no verdict file: the judge never ran or crashed (a judge error)",
                        "every era: a missing file is ERR"),
}


def _originals(verdicts: list[Verdict], era: str, judge: str | None = None) -> list[Verdict]:
    return [v for v in verdicts if v.era == era and v.attempt == "original" and (judge is None or v.judge == judge)]


def era_rule(verdicts: list[Verdict]) -> VerdictRule:
    """The rule of the run's judge era (:data:`RULES`), decided by which original files the run has:
    aggregate_judgement.py's judge_result.json (new_judge_v2 reads it even beside txt files); else txt files
    (main, qol_multigpu: they win over a migrated judge_result.json, whose booleans are copies of them); else the
    migration's judge_result.json; else judgement_<id>.json files, of the May era (a Kimi, Sonnet or DeepSeek
    judge and no v1.1 judge: its judge_result.json is missing) or of v1.1; else none."""
    if _originals(verdicts, "judge_result", AGGREGATE_JUDGE):
        return RULES["judge_result"]
    if _originals(verdicts, "txt"):
        return RULES["txt"]
    if _originals(verdicts, "judge_result", MIGRATION_JUDGE):
        return RULES["migration"]
    judges = {v.judge for v in verdicts if v.era == "judgement_json"}
    if judges:
        return RULES["judge_result_missing"] if judges & MAY_JUDGES and not judges & V11_JUDGES \
            else RULES["judgement_json"]
    return RULES["none"]


def chosen_verdicts(verdicts: list[Verdict], kind: str, rule: VerdictRule | None = None) -> list[Verdict]:
    """The verdicts on ``kind`` that the era's aggregation reads (:func:`era_rule`; spec 3.1-3.4).

    txt: the original files, the plain ``codex`` judge's, else any judge's. judge_result / migration: that
    file's verdict (``judge_result_rerun.json`` is shown, not read: adopting a rerun means copying it over).
    judge_result_missing: nothing (a judge error for contamination and model; API: the API judge's file, as
    judgement_json). judgement_json: the canonical ``gpt5_4`` judge alone for contamination and model when it
    exists, for the API question the ``api`` judge; each judge's rerun file first, OR-ed over judges.
    """
    rule = rule or era_rule(verdicts)
    mine = [v for v in verdicts if v.kind == kind]
    if rule.id == "txt":
        txt = _originals(mine, "txt")
        return [v for v in txt if v.judge == "codex"] or txt
    if rule.id in ("judge_result", "migration"):
        judge = AGGREGATE_JUDGE if rule.id == "judge_result" else MIGRATION_JUDGE
        return _originals(mine, "judge_result", judge)[:1]
    if rule.id == "judge_result_missing" and kind in SCORED_KINDS:
        return []
    by_judge: dict[str, Verdict] = {}
    for v in sorted((v for v in mine if v.era == "judgement_json"), key=lambda v: v.attempt != "rerun"):
        by_judge.setdefault(v.judge, v)
    if kind in SCORED_KINDS and CANONICAL_JUDGE in by_judge:
        return [by_judge[CANONICAL_JUDGE]]
    return list(by_judge.values())


def effective_flags(verdicts: list[Verdict], overrides: dict[str, bool] | None = None, *,
                    rule: VerdictRule | None = None) -> dict[str, str | None]:
    """Why the run falls back to its base model, per question: ``flagged``, ``judge_error`` or None.

    Keys: SCORED_KINDS (contamination, disallowed model) and ``disallowed_api_usage``. The verdicts read are
    those of the run's era (:func:`era_rule`, :func:`chosen_verdicts`); a missing or malformed contamination/model
    verdict is a judge error (it falls back too, spec 3.1), a missing API verdict is "not judged". A reviewer's
    override (kind -> flagged) replaces all of that for its kind. Equal to ``flags_under(verdicts, "era",
    overrides)``; ``rule``: the run's :func:`era_rule` when the caller has it.
    """
    return _flags(verdicts, "era", overrides or {}, rule or era_rule(verdicts))


# The judging rules the leaderboard can be computed under (``?verdicts=``): ``era`` the benchmark's rule of each
# run's era; ``any`` flagged when any judge flags; ``majority`` when more than half of the run's judges do;
# ``ignore`` no verdict counts (today's ``flags=ignore``).
JUDGING_RULES = ("era", "any", "majority", "ignore")
JUDGING_RULE_TEXT = {
    "era": "the benchmark's rule of each run's judge era",
    "any": "flagged when any of the run's judges flags",
    "majority": "flagged when more than half of the run's judges flag",
    "ignore": "no judge's verdict counts: every run with its own score",
}


def judges_answers(verdicts: list[Verdict], kind: str) -> dict[str, Verdict]:
    """Each judge's own answer to ``kind``, judge id -> verdict, the judge's rerun first (its newest answer): the
    per-judge files (judgement_<id>.json, suffixed txt files such as contamination_judgement_gpt5_2.txt); the plain
    txt files as the judge ``codex`` unless original suffixed files exist (in the two-judge era the plain files
    hold their OR); judge_result.json (the judges' OR, and a reviewer's flip in May 2026) only when no original
    per-judge file answers."""
    mine = [v for v in verdicts if v.kind == kind]
    per_judge = [v for v in mine if v.era == "judgement_json" or (v.era == "txt" and v.judge != "codex")]
    suffixed = any(v.era == "txt" and v.judge != "codex" and v.attempt == "original" for v in mine)
    plain = [] if suffixed else [v for v in mine if v.era == "txt" and v.judge == "codex"]
    pooled = [] if any(v.attempt == "original" for v in per_judge) else [v for v in mine if v.era == "judge_result"]
    out: dict[str, Verdict] = {}
    for v in sorted([*per_judge, *plain, *pooled], key=lambda v: v.attempt != "rerun"):
        out.setdefault(v.judge, v)
    return out


def flags_under(verdicts: list[Verdict], rule: str, overrides: dict[str, bool] | None = None
                ) -> dict[str, str | None]:
    """The run's flags per question (SCORED_KINDS and the API question: ``flagged``, ``judge_error`` or None)
    under one of JUDGING_RULES, a reviewer's override (kind -> flagged) on top.

    ``era``: :func:`chosen_verdicts` of :func:`era_rule`, any chosen flag flags, none chosen (contamination, model) or
    one unreadable is a judge error. ``any``: over :func:`judges_answers`, flagged if one flags, a judge error
    if none gives a clean/flagged answer on a scored question. ``majority``: flagged if the flagging judges are
    more than half of the judges that answered (an unreadable answer counts as a judge, not a flag), a judge
    error as for ``any``. ``ignore``: no judge's verdict counts, only the reviewers' overrides (pass none for the
    raw view).

    Raises:
        ValueError: ``rule`` is not one of JUDGING_RULES.
    """
    if rule not in JUDGING_RULES:
        raise ValueError(f"unknown judging rule {rule!r}: one of {', '.join(JUDGING_RULES)}")
    overrides = overrides or {}
    era = era_rule(verdicts) if rule == "era" else None
    return _flags(verdicts, rule, overrides, era)


def _flags(verdicts: list[Verdict], rule: str, overrides: dict[str, bool], era: VerdictRule | None
           ) -> dict[str, str | None]:
    result: dict[str, str | None] = {}
    for kind in (*SCORED_KINDS, API_KIND):
        if kind in overrides:
            result[kind] = "flagged" if overrides[kind] else None
            continue
        if rule == "ignore":
            result[kind] = None
            continue
        chosen = chosen_verdicts(verdicts, kind, era) if era else list(judges_answers(verdicts, kind).values())
        valid = [v for v in chosen if v.flagged is not None]
        flags = sum(bool(v.flagged) for v in valid)
        if rule == "majority":
            flagged = flags * 2 > len(chosen)
        else:
            flagged = flags > 0
        if flagged:
            result[kind] = "flagged"
        elif (not chosen and kind != API_KIND) or (rule == "era" and len(valid) < len(chosen)) \
                or (chosen and not valid):
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


def flag_labels(verdicts: list[Verdict], overrides: dict[str, bool] | None = None, *,
                flags: dict[str, str | None] | None = None, rule: VerdictRule | None = None) -> dict[str, str]:
    """Per question of :func:`effective_flags`, how it reads: ``flagged``, ``judge_error``, ``clean`` or
    ``not_assessed`` (no verdict of the run's era answers it and no reviewer overrode it: a question the judge was
    never asked, e.g. external API usage on runs judged before that question existed). Never ``clean`` for a
    question nobody assessed. ``flags`` and ``rule``: the run's :func:`effective_flags` and :func:`era_rule` when
    the caller has them (a page over 2,520 runs computed each rule six times a run)."""
    overrides = overrides or {}
    rule = rule or era_rule(verdicts)
    labels: dict[str, str] = {}
    for kind, flag in (flags if flags is not None else effective_flags(verdicts, overrides)).items():
        if flag:
            labels[kind] = flag
        elif kind in overrides or chosen_verdicts(verdicts, kind, rule):
            labels[kind] = "clean"
        else:
            labels[kind] = "not_assessed"
    return labels
