"""Whole numbers from text a visitor (or a trace) sends: ASCII digits only.

``str.isdigit()`` is true for "²", "①" or "٣", and ``int()`` then raises or accepts a digit of another script, so a
check with it answered 500 to ``?step=²``. Every view reads its number parameters through :func:`query_int`, which
answers 400 (Django's ``BadRequest``) for anything but ``[0-9]+`` (with ``signed``, one leading ``-``); other code
parses with :func:`ascii_int`.
"""
from __future__ import annotations

import re

from django.core.exceptions import BadRequest
from django.http import HttpRequest

_DIGITS = re.compile(r"[0-9]{1,18}")  # 18 digits: every value fits a signed 64-bit integer (DuckDB BIGINT)
_SIGNED = re.compile(r"-?[0-9]{1,18}")


def ascii_int(text: str | None, *, signed: bool = False) -> int | None:
    """``text`` as an int when it is 1-18 ASCII digits (``signed``: after an optional ``-``), else None."""
    if text is None:
        return None
    return int(text) if (_SIGNED if signed else _DIGITS).fullmatch(text) else None


def query_int(request: HttpRequest, name: str, default: int | None = None, *, signed: bool = False,
              minimum: int | None = None, maximum: int | None = None) -> int | None:
    """The query parameter ``name`` of ``request`` as an int; ``default`` when it is absent or empty.

    Raises ``django.core.exceptions.BadRequest`` (Django answers 400) for any other text than 1-18 ASCII digits
    (``signed``: with an optional leading ``-``) and for a value outside ``minimum``..``maximum`` (each optional).
    """
    text = request.GET.get(name, "")
    if text == "":
        return default
    value = ascii_int(text, signed=signed)
    if value is None:
        raise BadRequest(f"?{name}= must be a whole number in ASCII digits, not {text[:40]!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise BadRequest(f"?{name}= must be between {minimum} and {maximum}, not {value}")
    return value
