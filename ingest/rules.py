"""Many rules over one text in one pass: a google-re2 ``Set`` says which rules can match, Python's ``re`` says what they
match.

What the rules read and how they run: docs/rules.md.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

import re2

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


# category (its escape letter) -> (ranges it may match: a superset, ranges it surely matches: a subset), both as code
# point ranges.
_CATEGORIES = {
    "d": (_ASCII_DIGIT + _NON_ASCII, _ASCII_DIGIT),
    "w": (_ASCII_WORD + _NON_ASCII, _ASCII_WORD),
    "s": (_ASCII_SPACE + _NON_ASCII, _ASCII_SPACE),
    "D": (_complement(_ASCII_DIGIT, _TOP), _complement(_ASCII_DIGIT)),
    "W": (_complement(_ASCII_WORD, _TOP), _complement(_ASCII_WORD)),
    "S": (_complement(_ASCII_SPACE, _TOP), _complement(_ASCII_SPACE)),
}
_ASCII_CATEGORIES = {  # under re.ASCII the categories are exactly their ASCII members
    "d": _ASCII_DIGIT, "w": _ASCII_WORD, "s": _ASCII_SPACE, "D": _complement(_ASCII_DIGIT, _TOP),
    "W": _complement(_ASCII_WORD, _TOP), "S": _complement(_ASCII_SPACE, _TOP),
}

# A parsed pattern is a list of nodes, each a tuple whose first item names its kind:
#   ("char", cp)                       one character (a literal or an escape such as \x41, \n, \N{EM DASH})
#   ("any",)                           .
#   ("category", letter)               \d \D \w \W \s \S (letter: d D w W s S)
#   ("set", negated, members)          [...] or [^...]; members: ("char", cp), ("range", lo, hi), ("category", letter)
#   ("branch", alternatives)           a|b, each alternative a node list
#   ("group", add, remove, body)       (...), (?:...), (?P<name>...), (?flags-flags:...): flags added and removed
#   ("atomic", body)                   (?>...)
#   ("repeat", low, high, mode, body)  * + ? {m,n}: high None for no bound; mode greedy, lazy (?) or possessive (+)
#   ("at", where)                      ^ $ \A \Z \b \B (where: ^ $ A Z b B)
#   ("look",)                          a lookahead or lookbehind assertion (its body is not kept)
Node = tuple
_FLAG_LETTERS = {"a": re.ASCII, "i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": re.UNICODE,
                 "x": re.VERBOSE, "L": re.LOCALE}
_ESCAPED_CHARS = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_REPEAT = re.compile(r"\{([0-9]*)(?:(,)([0-9]*))?\}")
_OCTAL = "01234567"


class _Parser:
    """Python's regular expression syntax (https://docs.python.org/3/library/re.html#regular-expression-syntax),
    read into nodes (above) for a pattern that ``re`` compiled, so it is well formed. Raises Unsupported for what
    has no relaxed form (back-references, conditionals) or is not read here (verbose and locale patterns)."""

    def __init__(self, text: str):
        self.text, self.at = text, 0

    def parse(self) -> list[Node]:
        nodes = self._alternation()
        if self.at < len(self.text):
            raise Unsupported(f"unbalanced parenthesis at {self.at}")
        return nodes

    def _next(self) -> str | None:
        return self.text[self.at] if self.at < len(self.text) else None

    def _take(self) -> str:
        if self.at >= len(self.text):
            raise Unsupported("the pattern ends inside a construct")
        self.at += 1
        return self.text[self.at - 1]

    def _alternation(self) -> list[Node]:
        branches = [self._sequence()]
        while self._next() == "|":
            self.at += 1
            branches.append(self._sequence())
        return branches[0] if len(branches) == 1 else [("branch", branches)]

    def _sequence(self) -> list[Node]:
        nodes: list[Node] = []
        while (c := self._next()) is not None and c not in "|)":
            node = self._atom()
            if node is not None:
                nodes.append(self._repeated(node))
        return nodes

    def _repeated(self, node: Node) -> Node:
        c = self._next()
        if c is not None and c in "*+?":
            self.at += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{" and (m := _REPEAT.match(self.text, self.at)) and m[0] != "{}":
            self.at = m.end()
            low = int(m[1]) if m[1] else 0
            high = (int(m[3]) if m[3] else None) if m[2] else low
        else:
            return node
        mode = "greedy"
        if self._next() in ("?", "+"):
            mode = "lazy" if self._take() == "?" else "possessive"
        return ("repeat", low, high, mode, [node])

    def _atom(self) -> Node | None:
        c = self._take()
        if c == "(":
            return self._group()
        if c == "[":
            return self._set()
        if c == "\\":
            return self._escape(in_set=False)
        if c in ".^$":
            return ("any",) if c == "." else ("at", c)
        return ("char", ord(c))

    def _body(self) -> list[Node]:
        body = self._alternation()
        if self._take() != ")":
            raise Unsupported("unbalanced parenthesis")
        return body

    def _group(self) -> Node | None:  # noqa: C901 - one branch per group syntax
        if self._next() != "?":
            return ("group", 0, 0, self._body())
        self.at += 1
        c = self._take()
        if c == ":":
            return ("group", 0, 0, self._body())
        if c == "P" and self._next() == "<":
            end = self.text.index(">", self.at)
            self.at = end + 1
            return ("group", 0, 0, self._body())
        if c in "=!" or (c == "<" and self._next() in ("=", "!")):
            if c == "<":
                self.at += 1
            self._body()
            return ("look",)
        if c == ">":
            return ("atomic", self._body())
        if c == "#":
            self.at = self.text.index(")", self.at) + 1
            return None
        if c in _FLAG_LETTERS or c == "-":
            self.at -= 1
            add, remove = self._flags(), 0
            if self._next() == "-":
                self.at += 1
                remove = self._flags()
            if (add | remove) & (re.VERBOSE | re.LOCALE):
                raise Unsupported("verbose or locale flags")
            if self._take() == ")":
                return None  # global flags: the compiled pattern's flags hold them already
            return ("group", add, remove, self._body())
        raise Unsupported(f"group (?{c}... has no relaxed form")  # (?P=name), (?(1)...)

    def _flags(self) -> int:
        flags = 0
        while (c := self._next()) is not None and c in _FLAG_LETTERS:
            flags |= _FLAG_LETTERS[c]
            self.at += 1
        return flags

    def _set(self) -> Node:
        negated = self._next() == "^"
        if negated:
            self.at += 1
        members: list[Node] = []
        while True:
            c = self._take()
            if c == "]" and members:
                return ("set", negated, members)
            first = self._escape(in_set=True) if c == "\\" else ("char", ord(c))
            if self._next() == "-" and self.text[self.at + 1:self.at + 2] not in ("]", ""):
                self.at += 1
                c = self._take()
                last = self._escape(in_set=True) if c == "\\" else ("char", ord(c))
                if first[0] != "char" or last[0] != "char":
                    raise Unsupported("a range between categories")
                members.append(("range", first[1], last[1]))
            else:
                members.append(first)

    def _digits(self, count: int, alphabet: str) -> str:
        taken = ""
        while len(taken) < count and (c := self._next()) is not None and c in alphabet:
            taken += c
            self.at += 1
        return taken

    def _escape(self, *, in_set: bool) -> Node:  # noqa: C901 - one branch per escape
        c = self._take()
        if c in "dDwWsS":
            return ("category", c)
        if c in "AZbB" and not in_set:
            return ("at", c)
        if c == "b":
            return ("char", 8)  # backspace, inside a set
        if c in _ESCAPED_CHARS:
            return ("char", _ESCAPED_CHARS[c])
        if c in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[c]
            return ("char", int(self._digits(width, "0123456789abcdefABCDEF"), 16))
        if c == "N":
            end = self.text.index("}", self.at)
            name, self.at = self.text[self.at + 1:end], end + 1
            return ("char", ord(unicodedata.lookup(name)))
        if c in _OCTAL and (in_set or c == "0"):
            return ("char", int(c + self._digits(2, _OCTAL), 8))
        if c in "123456789":  # three octal digits, else a back-reference
            following = self.text[self.at:self.at + 2]
            if c in _OCTAL and len(following) == 2 and all(d in _OCTAL for d in following):
                self.at += 2
                return ("char", int(c + following, 8))
            raise Unsupported("a back-reference")
        return ("char", ord(c))


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

    def emit(self, nodes: list[Node], flags: int) -> str:
        return "".join(self.node(node, flags) for node in nodes)

    def _members(self, members: list[Node], flags: int, *, negated: bool) -> list[tuple[int, int]]:
        ignorecase = bool(flags & re.IGNORECASE)
        ranges: list[tuple[int, int]] = []
        for member in members:
            if member[0] == "char":
                ranges += self.char(member[1], ignorecase, negated=negated)
            elif member[0] == "range":
                ranges += self.range(member[1], member[2], ignorecase, negated=negated)
            elif flags & re.ASCII:
                ranges += _ASCII_CATEGORIES[member[1]]
            else:
                ranges += _CATEGORIES[member[1]][1 if negated else 0]
        return ranges

    def node(self, node: Node, flags: int) -> str:  # noqa: C901 - one branch per node kind
        kind = node[0]
        if kind in ("char", "category"):
            return _class(self._members([node], flags, negated=False))
        if kind == "set":
            return _class(self._members(node[2], flags, negated=node[1]), negated=node[1])
        if kind == "any":
            return "[\\x{0}-\\x{10ffff}]" if flags & re.DOTALL else "[^\\n]"
        if kind == "branch":
            return "(?:" + "|".join(self.emit(branch, flags) for branch in node[1]) + ")"
        if kind == "group":
            _, add, remove, body = node
            return "(?:" + self.emit(body, (flags | add) & ~remove) + ")"
        if kind == "atomic":
            self.exact = False
            return "(?:" + self.emit(node[1], flags) + ")"
        if kind == "repeat":
            _, low, high, mode, body = node
            inner = "(?:" + self.emit(body, flags) + ")"
            if mode == "possessive":
                self.exact = False
            if low > 1000 or (high is not None and high > 1000):
                self.exact = False
                return inner + "*"
            if high is None:
                return inner + ("*" if low == 0 else "+" if low == 1 else f"{{{low},}}")
            return inner + f"{{{low},{high}}}"
        if kind == "at":
            where = node[1]
            if where == "^":
                return "(?m:^)" if flags & re.MULTILINE else "^"
            if where in "AZ":
                return "\\A" if where == "A" else "\\z"
            if where == "$" and flags & re.MULTILINE:
                return "(?m:$)"
            if where in "bB" and self.boundaries:
                if where == "B":
                    self.exact = False  # Python's \B never matches in an empty text, RE2's does
                return "\\" + where
            self.exact = False
            return ""  # \b, \B, $ without MULTILINE: they only forbid matches
        if kind == "look":
            self.exact = False
            return ""  # lookaround: only forbids matches
        raise Unsupported(f"{kind} has no relaxed form")


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


def parse(pattern: re.Pattern[str]) -> list[Node]:
    """The nodes of a compiled ``str`` pattern (:class:`_Parser`); its flags are ``pattern.flags`` (the inline
    global ones included). Raises Unsupported."""
    if pattern.flags & (re.VERBOSE | re.LOCALE):
        raise Unsupported("verbose or locale flags")
    return _Parser(pattern.pattern).parse()


def relax(pattern: re.Pattern[str]) -> str:
    """The RE2 pattern that matches every text ``pattern`` matches (module docstring). Raises Unsupported."""
    return _Relaxer(boundaries=False).emit(parse(pattern), pattern.flags)


def ascii_form(pattern: re.Pattern[str]) -> tuple[str, bool]:
    """``(RE2 pattern, exact)``: the relaxed form with ``\\b``/``\\B`` kept; ``exact``: it matches an ASCII text
    exactly when ``pattern`` does (else it matches at least those texts). Raises Unsupported."""
    relaxer = _Relaxer(boundaries=True)
    return relaxer.emit(parse(pattern), pattern.flags), relaxer.exact


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
