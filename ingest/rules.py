"""Many rules over one text in one pass: a google-re2 ``Set`` says which rules can match, Python's ``re`` says what they
match.

What the rules read and how they run: docs/rules.md.
"""
from __future__ import annotations

import importlib
import re
from collections.abc import Mapping

import re2

# Python's own regex parser (private modules; typeshed does not declare them, so they are imported by name).
sre_c = importlib.import_module("re._constants")
sre_parse = importlib.import_module("re._parser")

RE2_MAX_MEM = 64 << 20  # bytes
_SEEN_MAX = 4096  # distinct (ASCII?, rules found) combinations whose result pair a RuleSet keeps
_TOP = 0x10FFFF
_NON_ASCII = [(0x80, _TOP)]
# ASCII letters that Python's re.IGNORECASE equates with non-ASCII characters (every other ASCII letter only
# matches its two cases), found by testing every code point against ``re`` (tests/test_rules_engine.py).
CASE_EXTRAS = {"i": "\u0130\u0131", "k": "\u212a", "s": "\u017f"}
_EXTRA_CHARS = {ord(c) for extra in CASE_EXTRAS.values() for c in extra}
# The ASCII members of Python's str categories (re.ASCII-independent: Unicode \s also holds \x1c-\x1f).
_ASCII_SPACE = [(0x09, 0x0D), (0x1C, 0x20)]
_ASCII_WORD = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_ASCII_DIGIT = [(0x30, 0x39)]


class Unsupported(ValueError):
    """A pattern construct with no relaxed RE2 form (back-references, conditionals)."""


def _complement(ranges: list[tuple[int, int]], top: int = 0x7F) -> list[tuple[int, int]]:
    """The characters 0..top not in ``ranges`` (sorted, non-overlapping)."""
    out, nxt = [], 0
    for lo, hi in sorted(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= top:
        out.append((nxt, top))
    return out


# category -> (ranges it may match: a superset, ranges it surely matches: a subset), both as code point ranges.
_CATEGORIES = {
    sre_c.CATEGORY_DIGIT: (_ASCII_DIGIT + _NON_ASCII, _ASCII_DIGIT),
    sre_c.CATEGORY_WORD: (_ASCII_WORD + _NON_ASCII, _ASCII_WORD),
    sre_c.CATEGORY_SPACE: (_ASCII_SPACE + _NON_ASCII, _ASCII_SPACE),
    sre_c.CATEGORY_NOT_DIGIT: (_complement(_ASCII_DIGIT, _TOP), _complement(_ASCII_DIGIT)),
    sre_c.CATEGORY_NOT_WORD: (_complement(_ASCII_WORD, _TOP), _complement(_ASCII_WORD)),
    sre_c.CATEGORY_NOT_SPACE: (_complement(_ASCII_SPACE, _TOP), _complement(_ASCII_SPACE)),
}
_ASCII_CATEGORIES = {  # under re.ASCII the categories are exactly their ASCII members
    sre_c.CATEGORY_DIGIT: _ASCII_DIGIT, sre_c.CATEGORY_WORD: _ASCII_WORD, sre_c.CATEGORY_SPACE: _ASCII_SPACE,
    sre_c.CATEGORY_NOT_DIGIT: _complement(_ASCII_DIGIT, _TOP), sre_c.CATEGORY_NOT_WORD: _complement(_ASCII_WORD, _TOP),
    sre_c.CATEGORY_NOT_SPACE: _complement(_ASCII_SPACE, _TOP),
}


class _Relaxer:
    """Writes the RE2 form of one parsed Python pattern (module docstring). ``boundaries``: keep ``\\b``/``\\B``
    (RE2's are ASCII ones: the same as Python's on an ASCII text). ``exact`` ends up False when something was
    left out or widened in a way that can differ from Python on an ASCII text."""

    def __init__(self, *, boundaries: bool):
        self.boundaries = boundaries
        self.exact = True

    def char(self, cp: int, ignorecase: bool, *, negated: bool) -> list[tuple[int, int]]:
        """The code points a pattern character ``cp`` may match (positive) or surely matches (``negated``)."""
        if not ignorecase:
            return [(cp, cp)]
        ch = chr(cp)
        if ch.isascii():
            if not ch.isalpha():
                return [(cp, cp)]
            chars = {ch.lower(), ch.upper()}
            if not negated:
                chars |= set(CASE_EXTRAS.get(ch.lower(), ""))
            return [(ord(c), ord(c)) for c in chars]
        self.exact = False  # a non-ASCII character under IGNORECASE: approximated
        if negated:
            return [(cp, cp)]
        if cp in _EXTRA_CHARS:
            letter = next(k for k, v in CASE_EXTRAS.items() if ch in v)
            return [(ord(letter), ord(letter)), (ord(letter.upper()), ord(letter.upper()))] + _NON_ASCII
        return _NON_ASCII

    def range(self, lo: int, hi: int, ignorecase: bool, *, negated: bool) -> list[tuple[int, int]]:
        if not ignorecase:
            return [(lo, hi)]
        if negated:
            if any(chr(cp).isalpha() for cp in range(lo, min(hi, 0x7F) + 1)) or hi > 0x7F:
                self.exact = False  # the range's other cases are not excluded
            return [(lo, hi)]
        out = [(lo, hi)]
        for cp in range(lo, min(hi, 0x7F) + 1):
            out += self.char(cp, True, negated=False)
        if hi > 0x7F:
            self.exact = False
            out += _NON_ASCII
            for extra in _EXTRA_CHARS:
                if lo <= extra <= hi:
                    out += self.char(extra, True, negated=False)
        return out

    def emit(self, items, flags: int) -> str:
        return "".join(self.node(op, av, flags) for op, av in items)

    def node(self, op, av, flags: int) -> str:  # noqa: C901 - one branch per node type of re._parser
        ignorecase = bool(flags & re.IGNORECASE)
        if op is sre_c.LITERAL:
            return _class(self.char(av, ignorecase, negated=False))
        if op is sre_c.NOT_LITERAL:
            return _class(self.char(av, ignorecase, negated=True), negated=True)
        if op is sre_c.ANY:
            return "[\\x{0}-\\x{10ffff}]" if flags & re.DOTALL else "[^\\n]"
        if op is sre_c.IN:
            negated = bool(av) and av[0][0] is sre_c.NEGATE
            ranges: list[tuple[int, int]] = []
            for kind, value in av[1:] if negated else av:
                if kind is sre_c.LITERAL:
                    ranges += self.char(value, ignorecase, negated=negated)
                elif kind is sre_c.RANGE:
                    ranges += self.range(value[0], value[1], ignorecase, negated=negated)
                elif kind is sre_c.CATEGORY:
                    if flags & re.ASCII:
                        ranges += _ASCII_CATEGORIES[value]
                    else:
                        ranges += _CATEGORIES[value][1 if negated else 0]
                else:
                    raise Unsupported(f"class member {kind}")
            return _class(ranges, negated=negated)
        if op is sre_c.BRANCH:
            return "(?:" + "|".join(self.emit(branch, flags) for branch in av[1]) + ")"
        if op is sre_c.SUBPATTERN:
            _group, add, remove, body = av
            return "(?:" + self.emit(body, (flags | add) & ~remove) + ")"
        if op is sre_c.ATOMIC_GROUP:
            self.exact = False
            return "(?:" + self.emit(av, flags) + ")"
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            low, high, body = av
            inner = "(?:" + self.emit(body, flags) + ")"
            if op is sre_c.POSSESSIVE_REPEAT:
                self.exact = False
            if low > 1000 or (high is not sre_c.MAXREPEAT and high > 1000):
                self.exact = False
                return inner + "*"
            if high is sre_c.MAXREPEAT:
                return inner + ("*" if low == 0 else "+" if low == 1 else f"{{{low},}}")
            return inner + f"{{{low},{high}}}"
        if op is sre_c.AT:
            if av is sre_c.AT_BEGINNING:
                return "(?m:^)" if flags & re.MULTILINE else "^"
            if av is sre_c.AT_BEGINNING_STRING:
                return "\\A"
            if av is sre_c.AT_END_STRING:
                return "\\z"
            if av is sre_c.AT_END and flags & re.MULTILINE:
                return "(?m:$)"
            if av in (sre_c.AT_BOUNDARY, sre_c.AT_NON_BOUNDARY) and self.boundaries:
                return "\\b" if av is sre_c.AT_BOUNDARY else "\\B"
            self.exact = False
            return ""  # \b, \B, $ without MULTILINE: they only forbid matches
        if op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            self.exact = False
            return ""  # lookaround: only forbids matches
        raise Unsupported(f"{op} has no relaxed form")


def _class(ranges: list[tuple[int, int]], *, negated: bool = False) -> str:
    merged: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    body = "".join(f"\\x{{{lo:x}}}" if lo == hi else f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in merged)
    if not body:
        return "[\\x{0}-\\x{10ffff}]" if negated else "[^\\x{0}-\\x{10ffff}]"
    if not negated and len(merged) == 1 and merged[0][0] == merged[0][1]:
        return body  # one character: \x{..} needs no brackets
    return f"[{'^' if negated else ''}{body}]"


def relax(pattern: re.Pattern[str]) -> str:
    """The RE2 pattern that matches every text ``pattern`` matches (module docstring). Raises Unsupported."""
    tree = sre_parse.parse(pattern.pattern, pattern.flags)
    return _Relaxer(boundaries=False).emit(tree.data, tree.state.flags)


def ascii_form(pattern: re.Pattern[str]) -> tuple[str, bool]:
    """``(RE2 pattern, exact)``: the relaxed form with ``\\b``/``\\B`` kept; ``exact``: it matches an ASCII text
    exactly when ``pattern`` does (else it matches at least those texts). Raises Unsupported."""
    tree = sre_parse.parse(pattern.pattern, pattern.flags)
    relaxer = _Relaxer(boundaries=True)
    return relaxer.emit(tree.data, tree.state.flags), relaxer.exact


_NONE: frozenset[str] = frozenset()


class RuleSet:
    """Named Python patterns scanned together (module docstring).

    Args:
        rules: name -> compiled ``str`` pattern; the names are what :meth:`scan` returns.
    Raises:
        re2.error: a Set does not compile within RE2_MAX_MEM.
    """

    def __init__(self, rules: Mapping[str, re.Pattern[str]]):
        self.rules = dict(rules)
        options = re2.Options()
        options.max_mem = RE2_MAX_MEM
        self._loose = re2.Set.SearchSet(options)
        self._ascii = re2.Set.SearchSet(options)
        self._names: list[str] = []
        unrelaxed, exact = set(), []
        for name, pattern in self.rules.items():
            try:
                loose = relax(pattern)
                ascii_pattern, is_exact = ascii_form(pattern)
            except Unsupported:
                unrelaxed.add(name)
                continue
            self._loose.Add(loose)
            self._ascii.Add(ascii_pattern)
            self._names.append(name)
            exact.append(is_exact)
        self.unrelaxed = frozenset(unrelaxed)
        self.exact_on_ascii = frozenset(n for n, e in zip(self._names, exact) if e)
        self._exact = exact
        self._all = frozenset(self.rules)
        # The answers without a match, made once: a long trace's calls each keep their scan (72,474 of them in
        # the 180 MB bench trace; a fresh tuple and empty set each held ~20 MB).
        self._everything = (self._all, _NONE)
        self._nothing = (self.unrelaxed, _NONE)
        self._seen: dict[tuple, tuple[frozenset[str], frozenset[str]]] = {}
        if self._names:
            self._loose.Compile()
            self._ascii.Compile()

    def scan(self, text: str) -> tuple[frozenset[str], frozenset[str]]:
        """``(may, sure)``: the names of the rules that may match somewhere in ``text`` (every rule whose pattern
        ``search``es ``text`` successfully is among them), and those among them that surely do (an ASCII text and
        a rule in :attr:`exact_on_ascii`; empty for other texts). One pass of one Set over the text."""
        if not self._names:
            return self._everything
        ascii_text = text.isascii()
        try:
            found = (self._ascii if ascii_text else self._loose).Match(text)
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 for RE2 to read
            return self._everything
        if not found:
            return self._nothing
        key = (ascii_text, *found)
        scanned = self._seen.get(key)
        if scanned is None:
            names, exact = self._names, self._exact
            may = frozenset([names[i] for i in found]).union(self.unrelaxed)
            sure = frozenset([names[i] for i in found if exact[i]]) if ascii_text else _NONE
            scanned = (may, sure)
            if len(self._seen) < _SEEN_MAX:  # a trace repeats few combinations: share one pair per combination
                self._seen[key] = scanned
        return scanned
