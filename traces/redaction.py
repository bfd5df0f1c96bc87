"""Redaction of credentials in trace text before it is stored (spec section 6).

The union of the rules the harness and its successors apply, all replaced by ``<omitted-api-key>``:

1. literal known secret values (longest first), each with any ``[A-Za-z0-9_-]`` characters glued to it;
2. tokens starting with the first 10 characters of a known value followed by more ``[A-Za-z0-9_-]``
   (truncated or partially printed keys);
3. key shapes whose values are unknown here: ``sk-proj-`` + 12+, ``sk-ant-(api|admin|oat|sid)NN-`` + 12+,
   ``AIzaSy`` + 20+, ``sk-or-vN-`` + 20+ (all of ``[A-Za-z0-9_-]``), ``hf_`` + 20+ alphanumerics, OpenAI
   ``sk-`` keys of 40+ characters, GitHub tokens ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` + 36+ and
   ``github_pat_`` + 22+. The two broad shapes (``sk-``, ``hf_``) must not be glued to a preceding word
   character, so ``task-...`` or ``use_hf_...`` identifiers survive.

All rules are alternatives of ONE compiled pattern, so a 50 MB trace is scanned once.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

PLACEHOLDER = "<omitted-api-key>"

SECRET_NAMES: tuple[str, ...] = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "BEN_HF_TOKEN", "HARDIK_HF_TOKEN", "OPENCODE_API_KEY",
    "ZAI_API_KEY", "DASHSCOPE_API_KEY", "CODEX_API_KEY", "HF_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
)
MIN_SECRET_LEN = 8
PARTIAL_PREFIX_LEN = 10
RESIDUAL_PREFIXES: tuple[str, ...] = ("sk-proj", "sk-ant", "AIzaSy", "sk-or-")
CONTEXT_CHARS = 50

_KEY_CHAR = "[A-Za-z0-9_-]"
SHAPES: tuple[str, ...] = (
    rf"sk-proj-{_KEY_CHAR}{{12,}}",
    rf"sk-ant-(?:api|admin|oat|sid)\d{{2,}}-{_KEY_CHAR}{{12,}}",
    rf"AIzaSy{_KEY_CHAR}{{20,}}",
    rf"sk-or-v\d-{_KEY_CHAR}{{20,}}",
    # Lookbehinds sit after the literal so that every alternative starts with a literal character: re then
    # skips ahead by first character, which makes the scan about 8x faster than with leading lookbehinds.
    r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{20,}",
    rf"sk-(?<![A-Za-z0-9_-]sk-){_KEY_CHAR}{{37,}}",
    r"gh[pousr]_[A-Za-z0-9]{36,}",
    r"github_pat_[A-Za-z0-9_]{22,}",
)
_RESIDUAL = re.compile("|".join(map(re.escape, RESIDUAL_PREFIXES)))


class Redactor:
    """Replaces known secret values and key-shaped tokens in text with ``<omitted-api-key>`` (spec 6).

    ``secrets``: name -> value (names only document where a value came from). Values shorter than
    ``MIN_SECRET_LEN`` (8) characters or starting with ``your-`` (template placeholders) are skipped, as are
    surrounding spaces.
    """

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        values = {v.strip() for v in (secrets or {}).values() if isinstance(v, str)}
        self.values = sorted((v for v in values if len(v) >= MIN_SECRET_LEN and not v.startswith("your-")),
                             key=len, reverse=True)
        literal = [f"{re.escape(v)}{_KEY_CHAR}*" for v in self.values]
        prefixes = sorted({v[:PARTIAL_PREFIX_LEN] for v in self.values}, key=len, reverse=True)
        partial = [f"{re.escape(p)}{_KEY_CHAR}+" for p in prefixes]
        self.pattern = re.compile("|".join([*literal, *partial, *SHAPES]))

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Redactor:
        """A redactor for the secrets of an environment (``os.environ`` or a parsed ``.env``).

        Reads :data:`SECRET_NAMES` (spec 6 rule 1, plus ``CODEX_API_KEY``, ``HF_TOKEN``,
        ``CLAUDE_CODE_OAUTH_TOKEN``) and every other ``*_API_KEY`` entry, as upstream's ``sanitize_trace.py`` does.
        Unlike the harness, missing names are not an error: the shape rules still apply. Raises nothing.
        """
        names = set(SECRET_NAMES) | {name for name in environ if name.endswith("_API_KEY")}
        return cls({name: environ[name] for name in sorted(names) if environ.get(name)})

    def redact(self, text: str) -> str:
        """``text`` with every secret (known value, partial value, key shape) replaced by ``<omitted-api-key>``
        (spec 6, rules 2-3 and the shape rules). One pass of one compiled pattern, linear in ``len(text)``.
        Raises nothing.
        """
        return self.pattern.sub(PLACEHOLDER, text)

    def residual_warnings(self, text: str) -> list[str]:
        """Warnings for key prefixes still in (already redacted) ``text``: ``sk-proj``, ``sk-ant``, ``AIzaSy``,
        ``sk-or-`` (spec 6 rule 4; they are not redacted because too broad).

        Each warning: ``"<prefix> at offset <n>: <50 characters of context>"`` (context centred on the hit,
        newlines shown as spaces), for admins to review. Raises nothing.
        """
        warnings = []
        for m in _RESIDUAL.finditer(text):
            start = max(0, m.start() - CONTEXT_CHARS // 2)
            context = text[start:start + CONTEXT_CHARS].replace("\n", " ").replace("\r", " ")
            warnings.append(f"{m.group()} at offset {m.start()}: {context}")
        return warnings
