"""The words the ingest (``ingest``) and the pages (``traces``, ``leaderboard``, ``export``) share: facet names and
their texts, the time phases and the idle-gap limit, the phase of a tool call, the overoptimism ratio, the evidence
rules' texts and the sizes the steps are stored in. The ingest measures with these, the pages name and compute with
them; neither side reaches into the other for them (the serving side never imports ``ingest``: pyproject.toml's
import contracts). The rules themselves (what a facet or an evidence mark matches) are the ingest's:
``ingest/facets.py``, ``ingest/evidence.py``, docs/facets.md, docs/rules.md.

A change here changes the facet and evidence versions (``ingest.reindex.current_versions`` hashes this module with
the rule modules), so ``manage.py reindex`` re-derives the stored facts.
"""
from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from ptbsite import jsontext

# --- Storage: how the steps' texts are kept (written by traces.services, read by traces.selectors.steps). ---
STEP_TEXT_CAP = 256 * 1024  # bytes (UTF-8) of a step's input or output stored in the steps table
TEXT_CHUNK = 1024 * 1024    # bytes of a whole text per compressed chunk in step_texts

# --- Facets: what an agent did (rules: ingest/facets.py, docs/facets.md). ---
METHOD_FACETS = ("sft", "lora", "qlora", "full_finetune", "grpo", "ppo", "dpo", "other_rl", "distillation",
                 "programmatic_data", "curriculum")
MEASURED_FACETS = ("library", "dataset", "training_launches", "rl_steps", "rollouts_per_step", "examples_generated",
                   "evaluations", "self_score")
FACET_TEXT = {
    "sft": "supervised fine-tuning (SFT)", "lora": "LoRA adapters", "qlora": "QLoRA (4-bit base)",
    "full_finetune": "full fine-tune (no LoRA seen)", "grpo": "GRPO", "ppo": "PPO", "dpo": "DPO or other preference optimisation",
    "other_rl": "other RL (RLOO, REINFORCE, ...)", "distillation": "distillation from a stronger model",
    "programmatic_data": "programmatic / solver-generated data", "curriculum": "curriculum",
    "library": "library", "dataset": "dataset loaded", "training_launches": "training launches",
    "rl_steps": "RL steps", "rollouts_per_step": "rollouts per step (per prompt)",
    "examples_generated": "examples generated", "evaluations": "evaluations run", "self_score": "last self-reported score",
}
# Short display names (table heads, chips); FACET_TEXT says more.
FACET_NAME = {
    "sft": "SFT", "lora": "LoRA", "qlora": "QLoRA", "full_finetune": "Full fine-tune", "grpo": "GRPO", "ppo": "PPO",
    "dpo": "DPO", "other_rl": "Other RL", "distillation": "Distillation", "programmatic_data": "Programmatic data",
    "curriculum": "Curriculum", "library": "Library", "dataset": "Dataset", "training_launches": "Training launches",
    "rl_steps": "RL steps", "rollouts_per_step": "Rollouts per step", "examples_generated": "Examples generated",
    "evaluations": "Evaluations", "self_score": "Self-reported score",
}


def facet_name(key: str) -> str:
    """A facet's short display name (FACET_NAME), the key with spaces when unknown."""
    return FACET_NAME.get(key, key.replace("_", " ").capitalize())


def overoptimism(self_score: float | None, verified: float | None) -> float | None:
    """The agent's self-reported score over the verified one (both fractions), e.g. 0.6 / 0.5 = 1.2.

    None when either is missing or the verified score is 0 (the ratio is undefined; pages show "n/a").
    """
    if self_score is None or verified is None or verified == 0:
        return None
    return self_score / verified


# --- Evidence: the rule ids a step is marked with, in words (rules: ingest/evidence.py, docs/rules.md). ---
RULE_TEXT = {
    "benchmark_dataset": "loads the benchmark's own dataset",
    "test_data": "uses a test split or test file",
    "non_base_model": "loads an instruct or other non-base model",
    "eval_harness": "modifies evaluate.py or templates/",
    "outside_llm_api": "calls an outside LLM API",
}

# --- Time: the phases a run's time is split into (ingest.facets.phases; docs/facets.md, "Time"). ---
IDLE_GAP_S = 600.0  # seconds between two steps, with no tool call running, counted as idle
PHASES = ("data", "training", "evaluation", "other", "idle")


@dataclass(frozen=True, slots=True)
class Phase:
    """A stretch of the run in one phase (one of PHASES): seconds since the trace's first timed step, and the
    step indices it spans (``step_from`` starts it, ``step_to`` ends it)."""

    phase: str
    start_s: float
    end_s: float
    step_from: int
    step_to: int


def time_split(stretches: Iterable[Phase]) -> dict[str, float]:
    """Seconds per phase (every phase of PHASES present, 0.0 where none) from ``ingest.facets.phases``' stretches."""
    split = dict.fromkeys(PHASES, 0.0)
    for stretch in stretches:
        split[stretch.phase] += stretch.end_s - stretch.start_s
    return split


# The phase of one tool call (docs/facets.md, "Phase of a tool call"): the first of these rules that matches its
# text (``eval``: its head) decides. The ingest runs them in its one RE2 pass over each call (ingest.facets); the
# run page's timeline classifies its calls' stored inputs with them (traces.selectors.analysis).
SHELL_TOOLS = {"bash", "shell", "run_shell_command", "exec_command", "local_shell", "execute_command"}
_FILE_PATH_KEYS = ("file_path", "filePath", "path", "absolute_path", "notebook_path")
UNPARSED = object()      # a tool input not parsed as JSON (it does not start with "{")
INVALID_JSON = object()  # a tool input that starts with "{" but is not JSON
_EVAL = re.compile(r"\bevaluate\.py\b|\blm[_-]eval\b|\binspect\s+eval\b|\blighteval\b|\b[\w-]*eval[\w-]*\.py\b", re.I)
_LAUNCH = re.compile(
    r"\b(?:python3?|accelerate\s+launch|torchrun|deepspeed)\b[^\n|;&]*?[\w./-]*?"
    r"(?:train|sft|grpo|dpo|ppo|orpo|kto|rloo|finetune|fine_tune|distill)[\w.-]*\.py\b"
    r"|\bllamafactory-cli\s+train\b|\baxolotl\s+train\b|\btune\s+run\b|\bpython3?\s+-m\s+verl\.trainer"
    r"|\btrl\s+(?:sft|grpo|dpo)\b", re.I)
_TRAINER_CODE = re.compile(r"\b\w*Trainer\(|\.train\(\)|finetuning_type\s*[:=]\s*full", re.I)
_TRAIN_NAME = re.compile(r"\b[\w./-]*(?:train|sft|grpo|dpo|ppo|finetune)[\w.-]*\.(?:py|log|sh|out)\b", re.I)
_DATA = re.compile(
    r"load_dataset|hf_hub_download|snapshot_download|(?:huggingface-cli|\bhf)\s+download\b[^\n]*--repo-type[= ]dataset"
    r"|\bfrom\s+datasets\s+import|\bimport\s+datasets\b|tokeni[sz]"
    r"|\b(?:prepare|preprocess|gen|generate|make|build|create|synth\w*)_?(?:data|dataset|examples|problems|puzzles|boards)\w*"
    r"|(?:^|[\s'\"/])data/|\.jsonl?\b|\.parquet\b|\.csv\b", re.I)
PHASE_RULES: dict[str, re.Pattern[str]] = {"eval": _EVAL, "launch": _LAUNCH, "trainer_code": _TRAINER_CODE,
                                           "train_name": _TRAIN_NAME, "data": _DATA}


# The phase of a tool call: the first of these phases one of whose rules of PHASE_RULES matches it, else "other".
PHASE_ORDER: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("evaluation", ("eval",)), ("training", ("launch", "trainer_code", "train_name")), ("data", ("data",)))


def phase_of(has: Callable[[str], bool]) -> str:
    """The phase of a tool call (:data:`PHASE_ORDER`), given ``has(name)``: whether the rule ``name`` of
    PHASE_RULES matches the call (``eval`` in its head, the others in its text)."""
    for phase, names in PHASE_ORDER:
        if any(has(name) for name in names):
            return phase
    return "other"


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def call_text(raw: str) -> tuple[str, str, object]:
    """(text, head, parsed JSON input) of a tool call's input: JSON inputs are read as their joined string values,
    head = their path (else the text); the third item is the parsed input, :data:`INVALID_JSON` when it starts with
    ``{`` but does not parse, else :data:`UNPARSED`."""
    data: object = UNPARSED
    if raw.startswith("{"):
        try:
            data = jsontext.loads(raw)
        except ValueError:
            data = INVALID_JSON
        if isinstance(data, dict):
            head = next((data[k] for k in _FILE_PATH_KEYS if isinstance(data.get(k), str)), None)
            text = "\n".join(_strings(data))
            return text, head if head is not None else text, data
    text = raw.replace('\\"', '"').replace("\\n", "\n")
    return text, text, data


def call_phase(raw: str | None) -> str:
    """The phase of one tool call from its input (:func:`call_text`, then PHASE_RULES with Python's ``re``: the
    same answer as the ingest's RE2 pass, ``ingest.facets.classify_call``)."""
    text, head, _ = call_text(raw or "")
    return phase_of(lambda name: PHASE_RULES[name].search(head if name == "eval" else text) is not None)


def code_version(*modules: object) -> str:
    """A version of the rules defined by ``modules`` (Python modules): 16 hex chars of sha256 over their source
    files, in order. Any edit of a rule (a pattern, the code that reads its matches) changes it; so does an edit
    of a comment, which only costs a needless re-derivation (``manage.py reindex``). Raises OSError when a
    module's source file cannot be read."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(inspect.getsource(module).encode("utf-8"))  # type: ignore[arg-type]
    return digest.hexdigest()[:16]
