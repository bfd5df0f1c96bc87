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
from hypothesis import HealthCheck, given, settings
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
