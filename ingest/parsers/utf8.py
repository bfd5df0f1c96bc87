"""Decoding a trace's bytes: UTF-8, every invalid byte sequence replaced by U+FFFD and counted (spec 2.1).

Its own module, below both ``parsers.framing`` (which frames decoded text) and ``ingest.blocks`` (which decodes
the blocks framing pulls): neither calls back into the other.
"""
from __future__ import annotations


def decode(data: bytes) -> tuple[str, int]:
    """``(text, replaced)``: UTF-8 ``data`` decoded with every invalid byte sequence replaced by U+FFFD, and how
    many were replaced (U+FFFD already encoded in ``data`` not counted). Raises nothing."""
    text = data.decode("utf-8", errors="replace")
    return text, text.count("\ufffd") - data.count("\ufffd".encode())
