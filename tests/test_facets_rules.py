"""Every facet rule on hand-written trace excerpts, in each scaffold format (ingest/facets.py).

Three episodes (lists of tool calls) cover every rule. Each is written out as a raw trace in the six formats
by the small renderers below (the way each scaffold prints a shell command, a file write and their results),
parsed by ``ingest.parsers.parse_trace``, and its facets compared with the expected ones: exact values and the
exact cited steps. Every call takes two steps (the call and its result) after a format's preamble, so the
k-th call is step ``PREAMBLE[fmt] + 2k`` and its result the step after; the test checks that layout too.
Codex ``exec --json`` and plain-text codex write files with shell heredocs (``exec --json`` shows a patch by
its path only); legacy codex protocol writes them with ``apply_patch``.
"""
from __future__ import annotations

import json

import pytest

from ingest import facets
from ingest.parsers import parse_trace

FORMATS = ("claude_code", "codex_exec", "codex_protocol", "codex_text", "gemini", "opencode")
PREAMBLE = {"claude_code": 1, "codex_exec": 1, "codex_protocol": 1, "codex_text": 1, "gemini": 1, "opencode": 0}
SCAFFOLD = {"claude_code": "claude", "codex_exec": "codex", "codex_protocol": "codex", "codex_text": "codexhigh",
            "gemini": "gemini", "opencode": "opencode"}


def sh(command: str, output: str) -> tuple[str, str, str]:
    return ("shell", command, output)


def write(path: str, content: str) -> tuple[str, str, str]:
    return ("write", path, content)


def heredoc(path: str, content: str) -> str:
    return f"cat > {path.rsplit('/', 1)[-1]} <<'EOF'\n{content}\nEOF"


def render(fmt: str, calls: list[tuple[str, str, str]]) -> str:
    """The calls as a raw solve_out.txt of the format (spec 2.2-2.5)."""
    lines: list[str] = []
    if fmt == "claude_code":
        lines.append('{"type":"system","subtype":"init","session_id":"s","model":"claude-opus-4-6","cwd":"/t"}')
        for k, (kind, arg, out) in enumerate(calls):
            name, inp = ("Bash", {"command": arg}) if kind == "shell" else ("Write", {"file_path": arg, "content": out})
            result = out if kind == "shell" else f"File created successfully at: {arg}"
            lines.append(json.dumps({"type": "assistant", "message": {"id": f"m{k}", "role": "assistant", "content": [
                {"type": "tool_use", "id": f"toolu_{k}", "name": name, "input": inp}]}}))
            lines.append(json.dumps({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": result}]}}))
    elif fmt == "codex_exec":
        lines.append('{"type":"thread.started","thread_id":"th"}')
        for k, (kind, arg, out) in enumerate(calls):
            command = arg if kind == "shell" else heredoc(arg, out)
            result = out if kind == "shell" else ""
            lines.append(json.dumps({"type": "item.completed", "item": {
                "id": f"item_{k}", "type": "command_execution", "command": f"bash -lc {json.dumps(command)}",
                "aggregated_output": result, "exit_code": 0, "status": "completed"}}))
    elif fmt == "codex_protocol":
        lines.append('{"id":"0","msg":{"type":"session_configured","session_id":"s","model":"o4-mini","cwd":"/t"}}')
        for k, (kind, arg, out) in enumerate(calls):
            if kind == "shell":
                lines.append(json.dumps({"id": "1", "msg": {"type": "exec_command_begin", "call_id": f"c{k}",
                                                            "command": ["bash", "-lc", arg], "cwd": "/t"}}))
                lines.append(json.dumps({"id": "1", "msg": {"type": "exec_command_end", "call_id": f"c{k}",
                                                            "exit_code": 0, "stdout": out, "stderr": ""}}))
            else:
                patch = "*** Begin Patch\n*** Add File: " + arg + "\n" + "".join(
                    f"+{line}\n" for line in out.splitlines()) + "*** End Patch"
                lines.append(json.dumps({"id": "1", "msg": {"type": "patch_apply_begin", "call_id": f"c{k}",
                                                            "auto_approved": True, "patch": patch}}))
                lines.append(json.dumps({"id": "1", "msg": {"type": "patch_apply_end", "call_id": f"c{k}",
                                                            "success": True, "stdout": "Success.", "stderr": ""}}))
    elif fmt == "codex_text":
        lines += ["OpenAI Codex v0.46.0 (research preview)", "--------", "workdir: /t", "model: gpt-5-codex",
                  "--------"]
        for kind, arg, out in calls:
            command = arg if kind == "shell" else heredoc(arg, out)
            result = out if kind == "shell" else ""
            lines += ["exec", f"bash -lc {json.dumps(command)} in /t", " succeeded in 12ms:", *result.splitlines()]
    elif fmt == "gemini":
        lines.append('{"type":"init","timestamp":"2026-02-01T12:00:00.000Z","session_id":"g","model":"gemini-3-pro"}')
        for k, (kind, arg, out) in enumerate(calls):
            name, params = (("run_shell_command", {"command": arg}) if kind == "shell"
                            else ("write_file", {"file_path": arg, "content": out}))
            result = out if kind == "shell" else f"Successfully created {arg}"
            lines.append(json.dumps({"type": "tool_use", "timestamp": "2026-02-01T12:00:01.000Z", "tool_name": name,
                                     "tool_id": f"t{k}", "parameters": params}))
            lines.append(json.dumps({"type": "tool_result", "timestamp": "2026-02-01T12:00:02.000Z", "tool_id": f"t{k}",
                                     "status": "success", "output": result}))
    elif fmt == "opencode":
        for k, (kind, arg, out) in enumerate(calls):
            tool, inp = ("bash", {"command": arg}) if kind == "shell" else ("write", {"filePath": arg, "content": out})
            result = out if kind == "shell" else ""
            lines.append(json.dumps({"type": "tool_use", "timestamp": 1775000000000 + k, "sessionID": "ses", "part": {
                "tool": tool, "callID": f"call_{k}", "state": {"status": "completed", "input": inp, "output": result}}}))
    return "\n".join(lines) + "\n"


SFT_THEN_GRPO = [
    sh("ls -la", "evaluate.py\ntemplates"),
    sh("python -c 'from datasets import load_dataset; ds = load_dataset(\"openai/gsm8k\", \"main\", split=\"train\"); "
       "print(len(ds))'", "7473"),
    write("/t/train_sft.py", "from datasets import load_dataset\nfrom peft import LoraConfig\n"
          "from trl import SFTConfig, SFTTrainer\n"
          "ds = load_dataset(\"openai/gsm8k\", \"main\", split=\"train\")\n"
          "trainer = SFTTrainer(model=\"Qwen/Qwen3-4B-Base\", args=SFTConfig(output_dir=\"out\"), train_dataset=ds,\n"
          "                     peft_config=LoraConfig(r=16))\ntrainer.train()"),
    sh("accelerate launch train_sft.py", "{'loss': 1.2}\n 10/100 [00:10<01:30]"),
    write("/t/train_grpo.py", "from trl import GRPOConfig, GRPOTrainer\n\n"
          "def reward_correct(completions, answer, **kwargs):\n"
          "    return [1.0 if a in c else 0.0 for c, a in zip(completions, answer)]\n\n"
          "args = GRPOConfig(output_dir=\"grpo\", num_generations=8, use_vllm=True)\n"
          "trainer = GRPOTrainer(model=\"out\", reward_funcs=[reward_correct], args=args)\ntrainer.train()"),
    sh("python train_grpo.py", "{'loss': 0.01, 'reward': 0.41, 'step': 40}\n{'loss': 0.01, 'reward': 0.52, 'step': 80}\n"
                               " 80/200 [10:00<15:00]"),
    sh("python evaluate.py --model-path grpo --limit 50", "Running gsm8k on 50 samples\naccuracy: 0.4000 (20/50)"),
    sh("python evaluate.py --model-path grpo", "Accuracy: 46.5%"),
]
# (facet, value, value_num, cited calls; "rN" = the result of call N)
SFT_THEN_GRPO_FACETS = [
    ("sft", "SFTConfig", None, [2]),
    ("lora", "LoraConfig", None, [2]),
    ("grpo", "GRPOConfig", None, [4, 5]),
    ("library", "trl", None, [2, 4]),
    ("library", "peft", None, [2]),
    ("library", "accelerate", None, [3]),
    ("library", "vllm", None, [4]),
    ("dataset", "openai/gsm8k", None, [1, 2]),
    ("training_launches", "2", 2.0, [3, 5]),
    ("rl_steps", "80", 80.0, ["r5"]),
    ("rollouts_per_step", "8", 8.0, [4]),
    ("evaluations", "2", 2.0, [6, 7]),
    ("self_score", "Accuracy: 46.5%", 0.465, [7, "r7"]),
]

DISTILLED_QLORA = [
    write("/t/gen_data.py", "import itertools, json\nfrom openai import OpenAI\n\nclient = OpenAI()\n\n"
          "def generate_boards(n):\n    return [b for b in itertools.product(range(3), repeat=4)][:n]\n\n"
          "# curriculum: easy-to-hard\nboards = sorted(generate_boards(500), key=lambda b: sum(b))"),
    sh("python gen_data.py", "Generated 500 boards\nWrote 1,200 examples to data/train.jsonl"),
    write("/t/sft_qlora.py", "from transformers import BitsAndBytesConfig\nfrom trl import SFTTrainer\n"
          "bnb = BitsAndBytesConfig(load_in_4bit=True)\n"
          "trainer = SFTTrainer(model=\"Qwen/Qwen3-8B-Base\", "
          "train_dataset=load_dataset(\"json\", data_files=\"data/train.jsonl\")[\"train\"])\ntrainer.train()"),
    sh("python sft_qlora.py", "{'loss': 0.9}"),
    sh("lm_eval --model hf --model_args pretrained=out --tasks gsm8k", "|gsm8k|exact_match|↑|0.3100|±|0.0127|"),
]
DISTILLED_QLORA_FACETS = [
    ("sft", "SFTTrainer", None, [2]),
    ("qlora", "BitsAndBytesConfig", None, [2]),
    ("distillation", "from openai import", None, [0]),
    ("programmatic_data", "def generate_boards(", None, [0]),
    ("curriculum", "curriculum", None, [0]),
    ("library", "trl", None, [2]),
    ("library", "transformers", None, [2]),
    ("training_launches", "1", 1.0, [3]),
    ("examples_generated", "1700", 1700.0, ["r1"]),
    ("evaluations", "1", 1.0, [4]),
    ("self_score", "exact_match|↑|0.3100", 0.31, [4, "r4"]),
]

FULL_FT_AND_RL = [
    write("/t/train_full.py", "from transformers import Trainer, TrainingArguments\n"
          "from trl import DPOTrainer, PPOTrainer, RLOOTrainer\n"
          "trainer = Trainer(model=model, args=TrainingArguments(output_dir=\"full\"))\ntrainer.train()"),
    sh("torchrun --nproc_per_node 1 train_full.py", "{'loss': 0.5}"),
    sh("python -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.rollout.n=5",
       "step:12 - critic/rewards/mean:0.31\nstep:15 - critic/rewards/mean:0.35"),
    sh("inspect eval evaluate.py --model vllm/final_model", "accuracy  0.412\nstderr    0.021"),
]
FULL_FT_AND_RL_FACETS = [
    ("full_finetune", "no LoRA/QLoRA in the training calls", None, [0, 1, 2]),
    ("grpo", "adv_estimator=grpo", None, [2]),
    ("ppo", "PPOTrainer", None, [0]),
    ("dpo", "DPOTrainer", None, [0]),
    ("other_rl", "RLOOTrainer", None, [0]),
    ("library", "trl", None, [0]),
    ("library", "transformers", None, [0]),
    ("library", "verl", None, [2]),
    ("training_launches", "2", 2.0, [1, 2]),
    ("rl_steps", "15", 15.0, ["r2"]),
    ("rollouts_per_step", "5", 5.0, [2]),
    ("evaluations", "1", 1.0, [3]),
    ("self_score", "accuracy  0.412", 0.412, [3, "r3"]),
]

EPISODES = {"sft_then_grpo": (SFT_THEN_GRPO, SFT_THEN_GRPO_FACETS),
            "distilled_qlora": (DISTILLED_QLORA, DISTILLED_QLORA_FACETS),
            "full_ft_and_rl": (FULL_FT_AND_RL, FULL_FT_AND_RL_FACETS)}


def _index(fmt: str, ref: int | str) -> int:
    """Step index of call k (an int) or of its result ("rk")."""
    if isinstance(ref, str):
        return PREAMBLE[fmt] + 2 * int(ref[1:]) + 1
    return PREAMBLE[fmt] + 2 * ref


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("episode", sorted(EPISODES))
def test_every_rule_finds_its_facet_and_cites_its_steps(fmt, episode):
    calls, expected = EPISODES[episode]
    trace = parse_trace(render(fmt, calls), scaffold=SCAFFOLD[fmt])
    assert trace.format == fmt
    for k in range(len(calls)):
        assert trace.steps[_index(fmt, k)].kind == "tool_call", (k, trace.steps[_index(fmt, k)])
        assert trace.steps[_index(fmt, f"r{k}")].kind == "tool_result", k
    got = [(f.facet, f.value, f.value_num, list(f.steps)) for f in facets.extract(trace.steps)]
    assert got == [(name, value, num, [_index(fmt, ref) for ref in refs]) for name, value, num, refs in expected]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("episode", sorted(EPISODES))
def test_settled_calls_give_the_same_facets_and_phases_without_their_text(fmt, episode):
    # What a trace read as a stream does (ingest.reader): each call settles right after it is taken,
    # before its result arrives; the results are slimmed as the collector does for a long trace.
    calls, expected = EPISODES[episode]
    trace = parse_trace(render(fmt, calls), scaffold=SCAFFOLD[fmt])
    collector = facets.CallCollector(slim=True)
    for step in trace.steps:
        call = collector.add(step)
        if call is not None:
            call.settle()
    settled = collector.calls
    assert settled and all(c.settled and c.text == "" and c.step.input is None and c.step.call_id is None
                           for c in settled if c.result is not None)
    got = [(f.facet, f.value, f.value_num, list(f.steps)) for f in facets.extract(trace.steps, calls=settled)]
    assert got == [(name, value, num, [_index(fmt, ref) for ref in refs]) for name, value, num, refs in expected]
    assert facets.phases(trace.steps, calls=settled) == facets.phases(trace.steps)


def test_a_settled_call_cannot_answer_a_rule_it_was_not_asked():
    trace = parse_trace(render("claude_code", [sh("python train_grpo.py --num_generations 8", "ok")]),
                        scaffold="claude")
    call = facets.tool_calls(trace.steps)[0]
    assert call.phase == "training" and {"launch", "train_name"} <= call.hits
    call.settle()
    assert call.has("launch") and call.find_groups("rollouts") == [(None, "8", None, None, None)]
    with pytest.raises(AssertionError, match="rule train_name was not answered"):  # the phases' rule, read before
        call.first("train_name")


def test_talking_about_a_method_is_not_using_it():
    trace = parse_trace(render("claude_code", [sh("echo plan", "plan")]).replace(
        '{"type":"assistant"', '{"type":"assistant","message":{"id":"x","role":"assistant","content":[{"type":"text",'
        '"text":"I will use GRPOTrainer with LoraConfig and a curriculum."}]}}\n{"type":"assistant"', 1))
    assert [f.facet for f in facets.extract(trace.steps)] == []


def test_an_evaluation_of_a_grpo_checkpoint_is_not_grpo():
    steps = parse_trace(render("opencode", [sh("python evaluate.py --model-path ./checkpoints/grpo_final",
                                               "accuracy: 0.2")])).steps
    assert [(f.facet, f.value) for f in facets.extract(steps)] == [("evaluations", "1"), ("self_score", "accuracy: 0.2")]


@pytest.mark.parametrize(("output", "score"), [
    ("accuracy: 0.41", 0.41), ("Accuracy: 41.2%", 0.412), ("accuracy  0.412", 0.412), ('{"accuracy": 0.25}', 0.25),
    ("pass@4: 0.35", 0.35), ("win rate 63.5", 0.635), ("accuracy: 0.3\naccuracy: 0.5\nstderr: 0.02", 0.5),
])
def test_self_reported_score_formats(output, score):
    steps = parse_trace(render("gemini", [sh("python evaluate.py", output)])).steps
    (found,) = [f for f in facets.extract(steps) if f.facet == "self_score"]
    assert found.value_num == pytest.approx(score)


def test_no_score_in_the_output_means_no_self_score():
    steps = parse_trace(render("gemini", [sh("python evaluate.py", "Traceback: CUDA out of memory")])).steps
    assert [f.facet for f in facets.extract(steps)] == ["evaluations"]


@pytest.mark.parametrize(("command", "phase"), [
    ("python evaluate.py --limit 50", "evaluation"), ("lm_eval --tasks gsm8k", "evaluation"),
    ("inspect eval task.py", "evaluation"), ("python my_eval.py", "evaluation"),
    ("nohup python train_sft_v1.py > logs/sft_1.log 2>&1 &", "training"), ("sleep 600 && tail -n 5 logs/sft_1.log", "training"),
    ("accelerate launch --config_file a.yaml run.py", "other"), ("torchrun train.py", "training"),
    ("python -c 'from datasets import load_dataset; load_dataset(\"x/y\")'", "data"), ("python prepare_data.py", "data"),
    ("head data/train.jsonl", "data"), ("nvidia-smi", "other"), ("huggingface-cli download Qwen/Qwen3-4B-Base", "other"),
])
def test_phase_of_a_call(command, phase):
    assert facets.classify_call(command, command) == phase
