"""Redaction of credentials in trace text before it is stored (spec section 6).

Every match is replaced by ``<omitted-api-key>``; rules that need context (a header name, a variable name, a
query parameter) keep that context and replace only the value. The rules, in three groups:

1. literal known secret values (longest first), each with any ``[A-Za-z0-9_-]`` characters glued to it
   (spec 6 rule 2), and tokens starting with the first 10 characters of a known value followed by more
   ``[A-Za-z0-9_-]`` (rule 3: truncated or partially printed keys). Known values come from the named variables
   (:data:`SECRET_NAMES`) and every ``*_API_KEY`` of the environment.
2. key shapes whose values are unknown here, one family per entry of :data:`RULES`, each ported from a maintained
   scanner's rule set and naming it: gitleaks ``config/gitleaks.toml`` (commit b58d3f1, July 2026), Yelp's
   detect-secrets ``detect_secrets/plugins/*.py`` (commit 5e14193, April 2026) and truffleHog's
   ``regexes.json``; where a rule was widened (shorter keys, no quotes) the entry says how.
3. the shapes of spec 6's August 2026 harness version (``sk-proj-``, ``sk-ant-(api|admin|oat|sid)NN-``,
   ``AIzaSy``, ``sk-or-vN-``, ``hf_``, OpenAI ``sk-`` of 40+, GitHub tokens), kept as they were.

Boundaries: raw trace lines are JSON, so a value inside a JSON string can follow an escape such as ``\\n``
(``...\\nAKIA...``). Where a rule must not start inside a word (``task-...`` is not an ``sk-`` key), a preceding
``\\n``/``\\r``/``\\t`` escape still counts as a boundary, as gitleaks' ``(?:[\\x60'"\\s;]|\\\\[nr]|$)`` terminators
do at the other end. Values never swallow ``"`` or ``\\``, so redacting a JSON line keeps it valid JSON.

Decoded text (issue 25): the raw lines of a file are redacted first (a fast gate), and then every string the
ingest stores passes the same pattern again as decoded text (:meth:`Redactor.redact_many`, one RE2 gate over many
texts): a key written with JSON escapes (``\\u002d``, ``\\/``) or split across streamed deltas is whole only
there. A fourth group serves that pass: the rest of a key glued to a placeholder (its first part was redacted
alone) is replaced too, not counted again; JSON escapes still in a decoded text (JSON inside a JSON string) are
resolved for a second search (:func:`unescaped`). Known values also come from the run itself
(:func:`learn_values`: what its files assign to key variables). Not covered, deliberately: other encodings
(base64, hex, percent-encoding) and keys broken by other characters (a hard wrap over two lines).

All rules are alternatives of ONE compiled pattern, so a 50 MB trace is scanned once; every alternative starts
with a plain literal character (case variants are spelled out), which lets ``re`` skip ahead by first character,
and the alternatives are grouped by that character (``bench/redaction.py``: 0.5x the throughput of the nine
rules this rule set replaced, for 16 families).
"""
from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

import re2
from dataclasses import dataclass

from . import rules

PLACEHOLDER = "<omitted-api-key>"

SECRET_NAMES: tuple[str, ...] = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "BEN_HF_TOKEN", "HARDIK_HF_TOKEN", "OPENCODE_API_KEY",
    "ZAI_API_KEY", "DASHSCOPE_API_KEY", "CODEX_API_KEY", "HF_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "WANDB_API_KEY",
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GITHUB_TOKEN", "GH_TOKEN",
)
MIN_SECRET_LEN = 8
PARTIAL_PREFIX_LEN = 10
RESIDUAL_PREFIXES: tuple[str, ...] = ("sk-proj", "sk-ant", "AIzaSy", "sk-or-")
CONTEXT_CHARS = 50

_KEY_CHAR = "[A-Za-z0-9_-]"
# A rule that must not start glued to a word: the literal, then a lookbehind over it (after the literal, so the
# alternative still starts with a literal character) allowing a JSON escape (\n, \r, \t) just before it.
_ESCAPED = r"\\[nrt]"


def _unglued(literal: str, word: str = "A-Za-z0-9_") -> str:
    """``literal`` (plain text) where it does not continue a word of ``[word]`` characters."""
    lit = re.escape(literal)
    return rf"{lit}(?:(?<={_ESCAPED}{lit})|(?<![{word}]{lit}))"


def _casings(*words: str) -> list[str]:
    """Each word as written, lower-cased, upper-cased and capitalised (distinct, in that order)."""
    out: list[str] = []
    for word in words:
        for variant in (word, word.lower(), word.upper(), word[:1].upper() + word[1:].lower()):
            if variant not in out:
                out.append(variant)
    return out


# Between a name and its value: optional closing quote (escaped in JSON-in-JSON), separator, optional quote.
_ASSIGN = r"""\\?["']?[ \t]*[=:][ \t]*\\?["']?"""


@dataclass(frozen=True)
class Rule:
    """One family of secret shapes: ``name`` (a test covers each), ``source`` (the scanner rule it ports) and
    ``patterns``: alternatives of the combined pattern. A pattern ending in a group named ``value`` keeps what
    comes before that group (the header or variable name) and replaces only the value."""

    name: str
    source: str
    patterns: tuple[str, ...]


def _keep(prefixes: list[str], value: str) -> tuple[str, ...]:
    """One ``prefix(?P<value>value)`` pattern per prefix: the prefix is kept, the value replaced. The group
    comes last so that the pattern still starts with the prefix's literal first character."""
    return tuple(f"{p}(?P<value{{n}}>{value})" for p in prefixes)


RULES: tuple[Rule, ...] = (
    Rule("anthropic", "gitleaks anthropic-api-key, anthropic-admin-api-key (sk-ant-api03-/admin01- + 93 + AA); "
         "widened to any sk-ant- infix (oat, sid, future ones) and 20+ key characters",
         (rf"sk-ant-(?:api|admin|oat|sid)\d{{2,}}-{_KEY_CHAR}{{12,}}", rf"sk-ant-{_KEY_CHAR}{{20,}}")),
    Rule("openai", "gitleaks openai-api-key and detect-secrets OpenAIDetector (sk-...T3BlbkFJ...); widened to "
         "sk-proj-/svcacct-/admin- + 12+, and sk- keys of 20-39 characters holding a digit (DeepSeek, DashScope "
         "and other OpenAI-compatible keys) or of 40+",
         (rf"sk-(?:proj|svcacct|admin)-{_KEY_CHAR}{{12,}}",
          _unglued("sk-", "A-Za-z0-9_-") + rf"(?:(?={_KEY_CHAR}{{0,39}}\d){_KEY_CHAR}{{20,}}|{_KEY_CHAR}{{37,}})")),
    Rule("openrouter", "spec 6 (harness, August 2026): sk-or-vN- + 20+", (rf"sk-or-v\d-{_KEY_CHAR}{{20,}}",)),
    Rule("aws_access_key_id", "gitleaks aws-access-token and detect-secrets AWSKeyDetector "
         "((A3T.|AKIA|ASIA|ABIA|ACCA) + 16 of [0-9A-Z], detect-secrets' wider alphabet)",
         tuple(_unglued(p, "A-Za-z0-9") + r"[0-9A-Z]{16}(?![A-Za-z0-9])"
               for p in ("AKIA", "ASIA", "ABIA", "ACCA")) + (_unglued("A3T", "A-Za-z0-9") + r"[A-Z0-9][0-9A-Z]{16}",)),
    Rule("aws_secret_access_key", "detect-secrets AWSKeyDetector (aws...key/pass/token...'<40 of [0-9a-zA-Z/+]>'); "
         "widened to unquoted values after = or :",
         _keep([rf"{a}[A-Za-z0-9_.-]{{0,20}}?(?:{'|'.join(_casings('key', 'secret', 'token', 'pass', 'pwd'))})"
                rf"[A-Za-z0-9_.-]{{0,20}}?{_ASSIGN}" for a in _casings("aws")],
               r"[0-9a-zA-Z/+]{40}(?![0-9a-zA-Z/+=])")),
    Rule("private_key", "gitleaks private-key (BEGIN ... PRIVATE KEY ... KEY-----); body bounded to 16 KB and "
         "never crossing a quote, so a lone header cannot swallow a JSON line",
         (r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[^\"]{64,16384}?KEY(?: BLOCK)?-----",)),
    Rule("slack", "gitleaks slack-bot-token, slack-user-token, slack-app-token, slack-legacy-token, "
         "slack-legacy-bot-token, slack-legacy-workspace-token, slack-config-access-token; detect-secrets "
         "SlackDetector (xox[abprso]-(digits-)+alnum)",
         (r"xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*", r"xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}",
          r"xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+", r"xox[os]-\d+-\d+-\d+-[a-fA-F\d]+",
          r"xoxb-[0-9]{8,14}-[a-zA-Z0-9]{18,26}", r"xox[ar]-(?:\d-)?[0-9a-zA-Z]{8,48}",
          r"xoxe.xox[bp]-\d-[A-Za-z0-9]{163,166}", r"xox[abprso]-(?:\d+-)+[A-Za-z0-9]+")),
    Rule("stripe", "gitleaks stripe-access-token ((sk|rk)_(test|live|prod)_ + 10-99 alphanumerics)",
         tuple(_unglued(f"{p}_{env}_") + r"[a-zA-Z0-9]{10,99}" for p in ("sk", "rk") for env in ("test", "live", "prod"))),
    Rule("jwt", "gitleaks jwt (ey... . ey... . signature); the backslash of its character class dropped (it "
         "would eat JSON escapes)",
         (_unglued("ey", "A-Za-z0-9_-") + r"[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9/_-]{17,}\.(?:[a-zA-Z0-9/_-]{10,}={0,2})?",)),
    Rule("google", "gitleaks gcp-api-key (AIza + 35); truffleHog regexes.json \"Google OAuth Access Token\" "
         "(ya29. + token; 20+ here); spec 6 AIzaSy + 20+",
         (r"AIza[\w-]{35}", rf"AIzaSy{_KEY_CHAR}{{20,}}", _unglued("ya29.") + r"[0-9A-Za-z_-]{20,}")),
    Rule("huggingface", "gitleaks huggingface-access-token (hf_ + 34 letters), huggingface-organization-api-token "
         "(api_org_ + 34 letters); spec 6 hf_ + 20+ alphanumerics",
         (_unglued("hf_") + r"[A-Za-z0-9]{20,}", _unglued("api_org_") + r"[A-Za-z]{34}")),
    Rule("github", "gitleaks github-pat, github-oauth, github-app-token, github-refresh-token (gh[pousr]_ + 36), "
         "github-fine-grained-pat (github_pat_ + 82; 22+ here)",
         (r"gh[pousr]_[A-Za-z0-9]{36,}", r"github_pat_[A-Za-z0-9_]{22,}")),
    Rule("wandb", "Weights & Biases API keys: 40 hex characters (the wandb CLI rejects other lengths); no scanner "
         "ships a rule, so only after the word wandb (WANDB_API_KEY=, wandb login, wandb.login(key=...))",
         _keep([rf"{w}[^\n\"'\\]{{0,40}}?[\s=:(\"'\\]{{1,4}}" for w in _casings("wandb")],
               r"[0-9a-f]{40}(?![0-9a-fA-F])")),
    Rule("auth_header", "gitleaks curl-auth-header (Authorization: Basic|Bearer|Token|Api-Token <value>, "
         "X-Api-Key:/Api-Token: <value>), applied to any header in the text, not only after curl",
         _keep([rf"{h}{_ASSIGN}[ \t]*(?:Bearer|bearer|BEARER|Basic|basic|Token|token|Api-Token)[ \t]+"
                for h in _casings("Authorization")]
               + [rf"{h}{_ASSIGN}" for h in _casings("X-Api-Key", "X-Auth-Token", "Api-Token", "X-Goog-Api-Key")],
               r"[\w=~@.+/-]{8,}")),
    Rule("url_param", "gitleaks generic-api-key keywords (access, api, auth, key, secret, token, password) as "
         "URL query parameters: ?api_key=, &apikey=, ?token=, &access_token=, ... (value 8+ characters)",
         _keep([rf"\{s}{k}=" for s in "?&" for k in _casings(
             "api_key", "apikey", "api-key", "access_token", "auth_token", "token", "key", "secret", "client_secret",
             "password", "sig", "signature")],
               r"[^&\s\"'#\\<>]{8,}")),
    Rule("url_userinfo", "RFC 3986 section 3.2.1 userinfo (``scheme://user:password@host``, deprecated for the "
         "password but still written by git and database clients): the password replaced, the user kept; a user of "
         "16+ characters holding a digit (``https://<token>@github.com``) is a token and replaced whole. "
         "detect-secrets BasicAuthDetector (``://user:password@``), the user-only form added",
         _keep([r"://[^\s/?#@:\"'\\<>]{1,128}:"], r"[^\s/?#@\"'\\<>]{1,256}(?=@)")
         + (r"://(?P<value{n}>(?=[^\s/?#@:\"'\\<>]{0,256}\d)[^\s/?#@:\"'\\<>]{16,256})(?=@)",)),
    Rule("env_assignment", "detect-secrets KeywordDetector denylist (api_?key, secret, password, token) for "
         "upper-case variable assignments NAME=value / \"NAME\": \"value\"; value 12+ characters holding a digit, "
         "not a $VAR reference",
         _keep([rf"{n}{_ASSIGN}" for n in ("API_KEY", "APIKEY", "_TOKEN", "_SECRET", "SECRET_KEY", "_PASSWORD",
                                            "ACCESS_KEY", "_PAT")],
               r"(?![$<])(?=[^\s\"'\\,;&<>(){}\[\]]{0,200}\d)[^\s\"'\\,;&<>(){}\[\]]{12,}")),
)
SHAPES: tuple[str, ...] = tuple(p for rule in RULES for p in rule.patterns)
# The rest of a secret glued to a placeholder: a key whose first part was redacted alone (one streamed delta, or
# the part before a ``\\u002d`` escape in a raw line) and whose second part joined it once decoded or merged.
# Replaced with the placeholder, not counted again (the secret was counted when its first part was replaced).
_TAIL = re.escape(PLACEHOLDER) + r"[A-Za-z0-9_/+=.-]*[A-Za-z0-9_/+=-]"
# JSON escapes, at any depth of nesting (a JSON string holding JSON), that may spell a key's characters: the
# decoded form of a field is searched again with these resolved (:func:`unescaped`).
_NESTED_ESCAPE = re.compile(r"\\+(?:u([0-9a-fA-F]{4})|/)")
_RESIDUAL = re.compile("|".join(map(re.escape, RESIDUAL_PREFIXES)))


_RESIDUAL_RE2 = re2.compile("|".join(map(re.escape, RESIDUAL_PREFIXES)))


def residual_hits(text: str, start: int = 0) -> list[tuple[int, str]]:
    """``[(offset, prefix)]`` of ``_RESIDUAL.finditer(text, start)``, in order, found with ``str.find`` (10x
    faster than the alternation over a long text): no two of :data:`RESIDUAL_PREFIXES` can overlap (none
    contains the start of another or of itself), so the matches are every occurrence of every prefix."""
    if _RESIDUAL_RE2.search(text, start) is None:  # one RE2 pass says whether there is any (the usual answer)
        return []
    hits = []
    for prefix in RESIDUAL_PREFIXES:
        at = text.find(prefix, start)
        while at >= 0:
            hits.append((at, prefix))
            at = text.find(prefix, at + len(prefix))
    hits.sort()
    return hits


def _numbered(patterns: tuple[str, ...]) -> list[str]:
    """Give each ``value`` group a unique number (a group name may appear once in the whole expression)."""
    out, n = [], 0
    for pattern in patterns:
        if "(?P<value{n}>" in pattern:
            pattern = pattern.replace("(?P<value{n}>", f"(?P<value{n}>")
            n += 1
        out.append(pattern)
    return out


_SHAPE_PATTERNS = _numbered(SHAPES)
# Letters and signs by how often they start a position in traces (English, code, JSON): the alternatives of the
# combined pattern are grouped by first character and the groups tried in this order, so that at a position
# whose character starts some rule, ``re`` finds that rule's group after few comparisons.
_FIRST_CHAR_ORDER = "etaoinsrhldcumfpgwybvkxjqz_-ETAOINSRHLDCUMFPGWYBVKXJQZ0123456789.&?"


def _split_first(pattern: str) -> tuple[str, str]:
    """``(first literal character, rest)`` of a pattern that starts with a literal (``\\?`` escapes one)."""
    if pattern[:1] == "\\":
        return pattern[1], pattern[2:]
    if pattern[:1] in "()[]{}.^$*+?|":
        raise ValueError(f"redaction pattern {pattern[:20]!r} must start with a literal character")
    return pattern[0], pattern[1:]


def _combined(patterns: list[str]) -> str:
    """One alternation of ``patterns`` grouped by first character (order kept inside a group)."""
    groups: dict[str, list[str]] = {}
    for pattern in patterns:
        char, rest = _split_first(pattern)
        groups.setdefault(char, []).append(rest)
    rank = {c: i for i, c in enumerate(_FIRST_CHAR_ORDER)}
    order = sorted(groups, key=lambda c: rank.get(c, len(rank)))
    return "|".join(f"{re.escape(c)}(?:{'|'.join(groups[c])})" for c in order)


class Redactor:
    """Replaces known secret values and key-shaped tokens in text with ``<omitted-api-key>`` (spec 6).

    ``secrets``: name -> value (names only document where a value came from). Values shorter than
    ``MIN_SECRET_LEN`` (8) characters or starting with ``your-`` (template placeholders) are skipped, as are
    surrounding spaces.
    """

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self.secrets = {k: v for k, v in (secrets or {}).items() if isinstance(v, str)}
        values = {v.strip() for v in self.secrets.values()}
        self.values = sorted((v for v in values if len(v) >= MIN_SECRET_LEN and not v.startswith("your-")),
                             key=len, reverse=True)
        literal = [f"{re.escape(v)}{_KEY_CHAR}*" for v in self.values]
        prefixes = sorted({v[:PARTIAL_PREFIX_LEN] for v in self.values}, key=len, reverse=True)
        partial = [f"{re.escape(p)}{_KEY_CHAR}+" for p in prefixes]
        self.pattern = re.compile(_combined([*literal, *partial, *_SHAPE_PATTERNS, _TAIL]))

    def may_match(self, text: str, pos: int = 0) -> bool:
        """Whether the pattern may match in ``text`` from ``pos`` on: False only when it surely does not. One RE2
        pass of the pattern's relaxed form (``ingest.rules.relax``: it matches wherever the pattern does,
        lookbehinds read as true), ~3.5x faster than the pattern's own search on a trace (the usual block of a
        trace holds no secret, and its redaction is then this pass alone). Raises nothing."""
        gate = _gate(self.pattern.pattern)
        if gate is None:
            return True
        try:
            return gate.search(text, pos) is not None
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 for RE2 to read
            return True

    def with_known(self, secrets: Mapping[str, str]) -> Redactor:
        """This redactor with more known values (``secrets``: name -> value), e.g. those a run's own files
        assigned to key variables (:func:`learn_values`); ``self`` when they add none."""
        merged = {**self.secrets, **{f"learned:{k}": v for k, v in secrets.items()}}
        if {v.strip() for v in merged.values()} == {v.strip() for v in self.secrets.values()}:
            return self
        return Redactor(merged)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Redactor:
        """A redactor for the secrets of an environment (``os.environ`` or a parsed ``.env``).

        Reads :data:`SECRET_NAMES` (spec 6 rule 1, plus ``CODEX_API_KEY``, ``HF_TOKEN``,
        ``CLAUDE_CODE_OAUTH_TOKEN``, ``WANDB_API_KEY``, the AWS and GitHub token variables) and every other
        ``*_API_KEY`` entry, as upstream's ``sanitize_trace.py`` does. Unlike the harness, missing names are not
        an error: the shape rules still apply. Raises nothing.
        """
        names = set(SECRET_NAMES) | {name for name in environ if name.endswith("_API_KEY")}
        return cls({name: environ[name] for name in sorted(names) if environ.get(name)})

    @staticmethod
    def _replace(match: re.Match[str]) -> str:
        if match.lastgroup is not None:  # a value group: what precedes it in the match is context, kept
            return match.string[match.start():match.start(match.lastgroup)] + PLACEHOLDER
        return PLACEHOLDER

    def redact(self, text: str) -> str:
        """``text`` with every secret (known value, partial value, key shape) replaced by ``<omitted-api-key>``
        (spec 6, rules 2-3 and the shape rules of :data:`RULES`). One pass of one compiled pattern, linear in
        ``len(text)``. Raises nothing."""
        return self.redact_counted(text)[0]

    def redact_counted(self, text: str) -> tuple[str, int]:
        """``(redacted text, number of secrets replaced)``; see :meth:`redact`. The rest of a key glued to a
        placeholder (``<omitted-api-key>`` + key characters) is replaced too but not counted. Raises nothing."""
        if not self.may_match(text):
            return text, 0
        tails = 0

        def replace(match: re.Match[str]) -> str:
            nonlocal tails
            if match.group()[:1] == "<":  # the tail rule: the only alternative that starts with "<"
                tails += 1
                return PLACEHOLDER
            return Redactor._replace(match)

        redacted, n = self.pattern.subn(replace, text)
        return redacted, n - tails

    def redact_decoded(self, text: str) -> tuple[str, int]:
        """``(text, secrets replaced)`` for a text decoded from JSON (a step's input or output after its deltas
        were merged, a verdict's text, a metrics note): :meth:`redact_counted`, then, when the text still holds
        JSON escapes (``\\uXXXX``, ``\\/``: a JSON string holding JSON, such as a tool call's ``arguments``,
        shown decoded by the trace viewer), the same on its :func:`unescaped` form, which is kept when that
        replaced anything. Raises nothing."""
        redacted, n = self.redact_counted(text)
        if "\\" in redacted and _NESTED_ESCAPE.search(redacted) is not None:
            view = unescaped(redacted)
            again, more = self.redact_counted(view)
            if again != view:
                return again, n + more
        return redacted, n

    def redact_many(self, texts: list[str | None]) -> tuple[list[str | None], int]:
        """``(texts, secrets replaced)``: :meth:`redact_decoded` of each text (None stays None), with one RE2 pass
        over all of them joined as the gate: only the texts a match of the relaxed pattern (or a JSON escape)
        touches are redacted one by one. A match of the relaxed pattern in one text is a match in the joined
        text, so no text that may hold a secret is skipped. Raises nothing."""
        gate = _decoded_gate(self.pattern.pattern)
        present = [(i, t) for i, t in enumerate(texts) if t]
        if not present:
            return list(texts), 0
        out = list(texts)
        flagged: set[int] = set()
        if gate is None:
            flagged = {i for i, _ in present}
        else:
            joined = "\n".join(t for _, t in present)
            try:
                matches = [(m.start(), m.end()) for m in gate.finditer(joined)]
            except UnicodeEncodeError:  # a lone surrogate: no UTF-8 for RE2 to read
                matches = [(0, len(joined))]
            if matches:
                starts, at = [], 0
                for _, t in present:
                    starts.append(at)
                    at += len(t) + 1
                for start, end in matches:
                    first = bisect.bisect_right(starts, start) - 1
                    last = bisect.bisect_right(starts, max(start, end - 1)) - 1
                    flagged.update(present[k][0] for k in range(first, last + 1))
        total = 0
        for i in sorted(flagged):
            text = texts[i]
            assert text is not None
            out[i], n = self.redact_decoded(text)
            total += n
        return out, total

    def residual_warnings(self, text: str) -> list[str]:
        """Warnings for key prefixes still in (already redacted) ``text``: ``sk-proj``, ``sk-ant``, ``AIzaSy``,
        ``sk-or-`` (spec 6 rule 4; they are not redacted because too broad).

        Each warning: ``"<prefix> at offset <n>: <50 characters of context>"`` (context centred on the hit,
        newlines shown as spaces), for admins to review. Raises nothing.
        """
        warnings = []
        for at, prefix in residual_hits(text):
            start = max(0, at - CONTEXT_CHARS // 2)
            context = text[start:start + CONTEXT_CHARS].replace("\n", " ").replace("\r", " ")
            warnings.append(f"{prefix} at offset {at}: {context}")
        return warnings


# The longest stretch of text any alternative of the redaction pattern may read across a newline: the private-key
# body (at most 16,384 characters plus its markers) is the longest; every other part that can match "\n" is a
# handful of separators, and every unbounded part stops at "\n". A match attempt starting further than this
# before a "\n" that ends the text read so far cannot reach it, so it gives what it gives on the whole text.
STREAM_REACH = 20_000
_LOOKBEHIND = 64  # characters before a resumed scan that the pattern's lookbehind assertions may read


# A key variable assigned a value in a file (``export WANDB_API_KEY=...``, ``env`` output, ``"HF_TOKEN": "..."``,
# a .env file cat). RE2 over bytes finds the name's last word and the value (a literal start: fast); the whole name
# is read backwards from there and checked against _KEY_NAME.
_ASSIGNED = re2.compile(rb"(KEY|TOKEN|SECRET|PASSWORD)\\?[\"']?[ \t]*[=:][ \t]*\\?[\"']?([A-Za-z0-9_./+=:-]{12,256})")
_KEY_NAME = re.compile(r"[A-Z][A-Z0-9_]*_(?:API_KEY|TOKEN|SECRET|SECRET_KEY|ACCESS_KEY|PASSWORD)")
_NAME_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
LEARN_OVERLAP = 1024  # bytes of a block kept for the next one (an assignment is shorter)
_LEARN_DEFER = 300  # a match ending this close to a block's end may be cut: taken from the next block instead


def learn_values(blocks: Iterable[bytes]) -> dict[str, str]:
    """``{name: value}`` of the key variables the raw text assigns (``NAME=value``, ``NAME: value``, quoted or
    not; names: :data:`SECRET_NAMES` and upper-case names ending in ``_API_KEY``, ``_TOKEN``, ``_SECRET``,
    ``_SECRET_KEY``, ``_ACCESS_KEY``, ``_PASSWORD``), so that the value is redacted wherever else it appears (an
    ``env`` dump early in a trace, the same key bare in a later ``.netrc`` or log). ``blocks``: the text's bytes
    in order (a file read in blocks; matches across two blocks are found within :data:`LEARN_OVERLAP`). A value
    is 12-256 key characters holding a letter and a digit (``$VAR``, ``<placeholder>``, ``your-key`` and words
    are not keys). A name assigned twice keeps both values (``NAME``, ``NAME#2``). Raises nothing."""
    found: dict[str, str] = {}
    held = b""
    pending = iter(blocks)
    block = next(pending, None)
    while block is not None:
        following = next(pending, None)
        data = held + block
        for match in _ASSIGNED.finditer(data):
            if following is not None and match.end() > len(data) - _LEARN_DEFER:
                break  # the next block's data starts LEARN_OVERLAP earlier: it finds this one whole
            at = match.start()
            while at > 0 and data[at - 1] in _NAME_CHARS:
                at -= 1
            glued = at > 0 and (chr(data[at - 1]).isalnum() or data[at - 1] == 0x5F)
            if glued and data[at - 2:at] not in (b"\\n", b"\\t", b"\\r"):  # a JSON escape is a boundary
                continue
            name_text = data[at:match.end(1)].decode("ascii")
            if name_text not in SECRET_NAMES and _KEY_NAME.fullmatch(name_text) is None:
                continue
            value = match.group(2).decode("ascii")
            if (value.startswith("your-") or not any(c.isdigit() for c in value)
                    or not any(c.isalpha() for c in value) or value in found.values()):
                continue
            n = 1
            while (key := name_text if n == 1 else f"{name_text}#{n}") in found:
                n += 1
            found[key] = value
        held = data[-LEARN_OVERLAP:]
        block = following
    return found


def unescaped(text: str) -> str:
    """``text`` with its JSON escapes that may spell a key resolved, at any depth of backslashes: ``\\uXXXX``
    (any number of backslashes before the ``u``) to its character when that is printable and not a quote or a
    backslash, ``\\/`` to ``/``; everything else kept. A JSON text stays JSON with the same meaning. Raises
    nothing."""

    def resolve(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return "/"
        char = chr(int(match.group(1), 16))
        if not char.isprintable() or char in "\"\\" or "\ud800" <= char <= "\udfff":
            return match.group()
        return char

    return _NESTED_ESCAPE.sub(resolve, text)


@functools.lru_cache(maxsize=8)
def _decoded_gate(pattern: str) -> Any:
    """:func:`_gate` widened to every JSON escape that :func:`unescaped` resolves (:meth:`Redactor.redact_many`);
    None when the pattern has no RE2 form."""
    options = re2.Options()
    options.max_mem = rules.RE2_MAX_MEM
    try:
        return re2.compile(rules.relax(re.compile(pattern)) + r"|\\(?:u[0-9a-fA-F]{4}|/)", options)
    except (rules.Unsupported, re2.error):
        return None


@functools.lru_cache(maxsize=8)
def _gate(pattern: str) -> Any:
    """The relaxed RE2 form of the redaction pattern ``pattern`` (:meth:`Redactor.may_match`), compiled once per
    process; None when it has none (every text may then match)."""
    options = re2.Options()
    options.max_mem = rules.RE2_MAX_MEM
    try:
        return re2.compile(rules.relax(re.compile(pattern)), options)
    except (rules.Unsupported, re2.error):
        return None


class Counting:
    """``redactor.redact_counted`` as a ``str -> str`` callable (what ``traces.verdicts.read_verdicts`` applies to a
    verdict file's text), counting the values it replaced in :attr:`secrets`."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.secrets = 0

    def __call__(self, text: str) -> str:
        redacted, n = self.redactor.redact_counted(text)
        self.secrets += n
        return redacted


class StreamRedactor:
    """:meth:`Redactor.redact_counted` over a text that arrives in pieces, each ending in ``"\\n"`` (but the
    last): the concatenation of what :meth:`feed` returns is exactly ``redact_counted`` of the concatenated
    pieces, and :attr:`secrets` its count. Holds at most :data:`STREAM_REACH` characters back."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.pattern = redactor.pattern
        self.secrets = 0
        self._behind = ""  # original text just before the held-back text, for lookbehinds
        self._held = ""

    def feed(self, piece: str, *, final: bool = False) -> str:
        """The redacted text that is now certain (``final``: all of it). Raises nothing."""
        text = self._behind + self._held + piece
        start = len(self._behind)
        limit = len(text) if final else len(text) - STREAM_REACH
        out: list[str] = []
        pos = start
        if limit > start and self.redactor.may_match(text, start):
            for match in self.pattern.finditer(text, start):
                if match.start() >= limit:
                    break
                out.append(text[pos:match.start()])
                tail = match.group()[:1] == "<"  # the rest of a key glued to a placeholder: not counted again
                out.append(PLACEHOLDER if tail else Redactor._replace(match))
                pos = match.end()
                self.secrets += 0 if tail else 1
        cut = max(pos, limit, start)
        out.append(text[pos:cut])
        self._behind, self._held = text[max(0, cut - _LOOKBEHIND):cut], text[cut:]
        return "".join(out)


class ResidualScanner:
    """:meth:`Redactor.residual_warnings` over redacted text that arrives in pieces: after :meth:`feed` of every
    piece (the last with ``final=True``), :attr:`warnings` is exactly the warnings of the whole text (offsets
    into it). Holds a few dozen characters back."""

    _HOLD = CONTEXT_CHARS  # more than a prefix plus the context after a hit

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self._text = ""
        self._offset = 0  # offset of _text[0] in the whole text
        self._pos = 0     # where the next search starts, in _text

    def feed(self, piece: str, *, final: bool = False) -> None:
        """Scan what ``piece`` makes certain. Raises nothing."""
        text = self._text + piece
        limit = len(text) if final else len(text) - self._HOLD
        pos = self._pos
        for at, prefix in residual_hits(text, pos):
            if at >= limit:
                break
            start = max(0, at - CONTEXT_CHARS // 2)
            context = text[start:start + CONTEXT_CHARS].replace("\n", " ").replace("\r", " ")
            self.warnings.append(f"{prefix} at offset {self._offset + at}: {context}")
            pos = at + len(prefix)
        pos = max(pos, limit) if limit > pos else pos
        keep = max(0, pos - CONTEXT_CHARS)
        self._text, self._offset, self._pos = text[keep:], self._offset + keep, pos - keep
