"""The multi-pattern scan (ingest/rules.py) never hides a match of a rule, and is exact on ASCII texts.

The relaxation rests on facts about Python's ``re`` that are checked here over every code point: which
non-ASCII characters IGNORECASE equates with ASCII letters, the ASCII members of ``\\w \\d \\s``, and that
``"reward" in text.lower()`` is the same test as ``re.search("reward", text, re.I)`` (rl_steps' gate). Then
every rule of every Set is checked against Python on texts built from the rules' trigger phrases, near misses,
case changes and the characters where Python and RE2 differ.
"""
from __future__ import annotations

import re
import string
import sys

import pytest
import re2
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.analysis_snapshot import CALL_FRAGMENTS, OUTPUT_FRAGMENTS
from ingest import evidence, facets
from ingest.rules import CASE_EXTRAS, RuleSet, ascii_form, relax

SETS = {"call": facets.CALL_RULES, "output": facets.OUTPUT_RULES, "evidence": evidence._RULES}
# Characters where Python's and RE2's notions differ: case-fold extras, Unicode letters, digits and spaces that
# Python's \w \d \s hold and RE2's do not, \v and \x1c (Python spaces, not RE2's), combining marks.
TRICKY = "İıſKéÉß٣\u00a0\u2003\u0085\x0b\x1c\u0307ΣσςＳ_-./\\\"'\n\t ;&|()=:,0123456789"


def test_case_extras_are_every_non_ascii_character_ignorecase_equates_with_an_ascii_letter():
    any_letter = re.compile("[a-z]", re.I)
    found: dict[str, str] = {}
    for cp in range(0x80, sys.maxunicode + 1):
        ch = chr(cp)
        if any_letter.fullmatch(ch):
            for letter in string.ascii_lowercase:
                if re.fullmatch(letter, ch, re.I):
                    found[letter] = found.get(letter, "") + ch
    assert found == CASE_EXTRAS
    for letter, extras in CASE_EXTRAS.items():  # and the other way round: the extras as pattern characters
        for extra in extras:
            assert re.fullmatch(extra, letter, re.I) and re.fullmatch(extra, letter.upper(), re.I)


def test_ascii_members_of_the_unicode_categories():
    for category, members in ((r"\s", "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "), (r"\d", string.digits),
                              (r"\w", string.ascii_letters + string.digits + "_")):
        assert {chr(c) for c in range(128) if re.match(category, chr(c))} == set(members)


def test_reward_in_lower_is_reward_under_ignorecase():
    # lower() gives an ASCII letter only for ASCII capitals, Kelvin (k) and dotted I (i + a combining dot):
    # none of r, e, w, a, d, so "reward" in text.lower() <=> a window of r/R e/E w/W a/A r/R d/D <=> re.I.
    makes_ascii = {chr(cp) for cp in range(0x80, sys.maxunicode + 1)
                   if any(c in string.ascii_letters for c in chr(cp).lower())}
    assert makes_ascii == {"\u0130", "\u212a"}
    assert not set("reward") & set(CASE_EXTRAS)


def test_every_rule_of_every_set_has_an_re2_form_that_is_exact_on_ascii():
    for name, rule_set in SETS.items():
        assert rule_set.unrelaxed == frozenset(), name
        assert rule_set.exact_on_ascii == frozenset(rule_set.rules), name


def test_relaxation_keeps_what_only_forbids_out():
    assert ascii_form(re.compile(r"(?<![\w/])score\b"))[1] is False  # a lookbehind: never exact
    assert relax(re.compile(r"\bx(?=y)")) == r"\x{78}"
    # IGNORECASE spells out Python's equal characters, Kelvin sign and long s included
    s = RuleSet({"k": re.compile("kiss", re.I)})
    assert s.scan("\u212a\u0130\u017fS")[0] == {"k"} and re.search("kiss", "\u212a\u0130\u017fS", re.I)
    # a lone surrogate cannot be read by RE2: every rule is a candidate
    assert s.scan("ki\ud800ss") == (frozenset({"k"}), frozenset())


def _texts() -> st.SearchStrategy[str]:
    pieces = st.one_of(st.sampled_from(CALL_FRAGMENTS), st.sampled_from(OUTPUT_FRAGMENTS),
                       st.text(alphabet=TRICKY, max_size=3),
                       st.sampled_from(CALL_FRAGMENTS).map(lambda f: f[: len(f) // 2]))
    cases = st.sampled_from([str, str.upper, str.lower, str.swapcase, lambda t: t.replace("i", "ı"),
                             lambda t: t.replace("s", "ſ"), lambda t: t.replace("k", "\u212a"),
                             lambda t: t.replace(" ", "\u00a0"), lambda t: t.replace("_", "é")])
    return st.tuples(st.lists(pieces, max_size=6), st.sampled_from(["", " ", "\n", "é", "; "]), cases).map(
        lambda parts: parts[2](parts[1].join(parts[0])))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_texts())
def test_the_scan_finds_every_rule_python_finds_and_only_those_on_ascii(text):
    for name, rule_set in SETS.items():
        may, sure = rule_set.scan(text)
        matching = {rule for rule, pattern in rule_set.rules.items() if pattern.search(text)}
        assert matching <= may, (name, text, matching - may)
        if text.isascii():
            assert may == sure == matching, (name, text)
        else:
            assert sure == frozenset()


@pytest.mark.parametrize("text", [fragment for fragment in CALL_FRAGMENTS + OUTPUT_FRAGMENTS if fragment])
def test_each_trigger_phrase_alone(text):
    for rule_set in SETS.values():
        may, _ = rule_set.scan(text)
        assert {rule for rule, pattern in rule_set.rules.items() if pattern.search(text)} <= may


# Pieces of Python's syntax the rules engine reads itself (ingest.rules._Parser): every escape and set form, flags
# scoped and global, each quantifier, groups of every kind, assertions (issue 28: it read CPython's private parser).
_ATOMS = ["a", "b", "K", "s", "\u00e9", "\u017f", ".", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "\\b", "\\B", "^", "$",
          "\\A", "\\Z", "\\.", "\\-", "\\n", "\\x41", "\\u00e9", "\\N{LATIN SMALL LETTER K}", "\\0", "\\101", "[a-c]",
          "[^a]", "[]a]", "[a-]", "[\\d_]", "[^\\w.]", "[A-Z0-9]", "[\\x41-\\x5a]", "[\\b\\n]", "{", "}", "a{}", "\\\\", "-", "/"]
_QUANTIFIERS = ["", "", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{,2}", "{2,}", "{1,2}?", "*+", "{,}"]
_OPENERS = ["(", "(?:", "(?i:", "(?-i:", "(?s:", "(?m:", "(?a:", "(?P<g>", "(?>", "(?=", "(?!", "(?<=a", "(?<!b", "(?#c)("]


def _patterns() -> st.SearchStrategy[str]:
    def compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(st.tuples(st.sampled_from(_OPENERS), inner).map(lambda t: f"{t[0]}{t[1]})"),
                         st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"))
    piece = st.tuples(st.recursive(st.sampled_from(_ATOMS), compound, max_leaves=5),
                      st.sampled_from(_QUANTIFIERS)).map("".join)
    return st.tuples(st.sampled_from(["", "", "(?i)", "(?m)"]), st.lists(piece, min_size=1, max_size=4)).map(
        lambda t: t[0] + "".join(t[1]))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(source=_patterns(), flags=st.sampled_from([0, re.I, re.M, re.S, re.A, re.I | re.M]),
       texts=st.lists(st.text(alphabet="abKksS\u017f\u0130\u212a\u00e9AZ_0.-]{}/\n \x08", max_size=8), max_size=25))
def test_the_relaxed_form_of_any_pattern_matches_wherever_python_does(source, flags, texts):
    try:
        pattern = re.compile(source, flags)
    except re.error:  # a generated pattern Python refuses (a lookbehind of no fixed width, a group named twice)
        assume(False)
    loose = re2.compile(relax(pattern))
    ascii_pattern, exact = ascii_form(pattern)
    strict = re2.compile(ascii_pattern)
    for text in texts:
        found = pattern.search(text) is not None
        assert not found or loose.search(text), (source, flags, text)
        if text.isascii():
            assert (strict.search(text) is not None) == found if exact else not found or strict.search(text), (
                source, flags, text)

