"""JSON text from outside (traces, judge files, tool inputs, metrics) parsed with a bound on its nesting.

``json.loads`` recurses once per nested array or object and raises ``RecursionError`` (not a ``ValueError``) past
the interpreter's limit (~1,000 levels), which a hostile or damaged trace reaches in 2 KB. Every reader of such text
parses it here, so that a nested-too-deep text is an ordinary ``ValueError`` (:class:`TooDeep`) its caller already
handles as invalid JSON.
"""
from __future__ import annotations

import json
import re
from typing import Any

import orjson
import re2

MAX_JSON_DEPTH = 100  # arrays/objects nested deeper than this are not parsed: the caller keeps the text
_LONG_DIGITS = re2.compile(r"[0-9]{19}")
# A text's UTF-8 bytes translated so that one pass says what loads() asks before parsing: every ASCII digit -> "0",
# "[" and "{" -> "[", every other byte -> " " (a character beyond ASCII is bytes >= 0x80, none of them a digit or a
# bracket). A run of 19 digits is then b"0" * 19 (what _LONG_DIGITS finds), the brackets' count that of "[".
_MARKS = bytes(ord("0") if chr(b).isdigit() and b < 128 else ord("[") if b in b"[{" else ord(" ") for b in range(256))
_NINETEEN = b"0" * 19
_BRACKETS = re.compile(r"[\[\]{}]")
_ESCAPE = re.compile(r"\\.", re.S)


def too_deep(text: str) -> bool:
    """Whether JSON ``text`` nests arrays and objects deeper than :data:`MAX_JSON_DEPTH` (brackets inside strings
    not counted). Linear; a line with fewer brackets than the limit is not even scanned. Raises nothing."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for i, part in enumerate(_ESCAPE.sub("", text).split('"')):
        if i % 2:  # inside a string
            continue
        for bracket in _BRACKETS.findall(part):
            depth += 1 if bracket in "[{" else -1
            if depth > MAX_JSON_DEPTH:
                return True
    return False


class TooDeep(ValueError):
    """A JSON text nested deeper than :data:`MAX_JSON_DEPTH` (parsing it could exhaust the stack)."""


def loads(text: str) -> Any:
    """``json.loads`` bounded in nesting: raises :class:`TooDeep` (a ValueError) for text nested deeper than
    :data:`MAX_JSON_DEPTH`, ``ValueError`` for invalid JSON; never ``RecursionError``.

    orjson decodes first (3-4x faster) unless the text has a run of 19 digits (orjson would make an integer
    beyond 64 bits a float); what it refuses (``NaN``, lone surrogate escapes, invalid JSON) goes to ``json.loads``, whose value or error message is then the answer, so the result
    is ``json.loads``' wherever orjson accepts a text ``json.loads`` also accepts, with the same value
    (``tests/test_parsers_framing.py`` checks the edge cases)."""
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate: the two questions below asked of the text itself
        if too_deep(text):
            raise TooDeep(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
        _LONG_DIGITS.search(text)  # raises UnicodeEncodeError (a ValueError): RE2 reads UTF-8
        raise
    # One C pass (_MARKS) for both questions, ~5x cheaper than a count of each bracket and RE2's search (whose
    # Python wrapper costs more than orjson's parse of a 1 KB line).
    marks = data.translate(_MARKS)
    if marks.count(b"[") > MAX_JSON_DEPTH and too_deep(text):
        raise TooDeep(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if _NINETEEN not in marks:  # _LONG_DIGITS.search(text) is None: orjson turns integers beyond 64 bits into floats
        try:
            return orjson.loads(data)  # the same value as of the text: data is its UTF-8
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(text)
    except RecursionError:  # too_deep already refused such text; kept for a shallow call stack's sake
        raise TooDeep(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
