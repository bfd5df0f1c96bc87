"""A step's tool input rendered by tool, as HTML: a shell command as a shell block, a written file with syntax
highlighting by its extension, an edit as a diff of the old and new text, other JSON pretty-printed.

Trace content is untrusted: every text goes through Pygments' HTML formatter, which escapes it (``<`` ``>`` ``&``
``"`` ``'``), or through Django's ``escape``; nothing from the trace is marked safe unescaped. An input that is
not whole JSON (cut to the page's display size, see ``traces.selectors.steps``) is shown as escaped text, as
before.
"""
from __future__ import annotations

import difflib
import functools
import json
import os
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import BashLexer, DiffLexer, JsonLexer, TextLexer, find_lexer_class_for_filename

from .vocabulary import SHELL_TOOLS
from ptbsite import jsontext

HIGHLIGHT_LIMIT = 200_000  # characters highlighted per input; longer texts are shown escaped, unhighlighted
_FORMATTER = HtmlFormatter(nowrap=True)
_PATH_KEYS = ("file_path", "filePath", "path", "absolute_path", "notebook_path", "filename")
_OLD_KEYS = ("old_string", "oldString", "old_str")
_NEW_KEYS = ("new_string", "newString", "new_str")
_CONTENT_KEYS = ("content", "file_text", "contents")


@dataclass(frozen=True)
class Rendered:
    """A tool input as the trace viewer shows it: ``kind`` (shell | file | diff | json | text), ``label`` (the
    file's path, or ""), ``html`` the escaped, highlighted body."""

    kind: str
    label: str
    html: SafeString


def _highlight(text: str, lexer: Lexer) -> SafeString:
    if len(text) > HIGHLIGHT_LIMIT:
        return escape(text)
    return mark_safe(highlight(text, lexer, _FORMATTER))  # Pygments' HtmlFormatter escapes every token


def _first(args: dict, keys: tuple[str, ...]) -> str | None:
    return next((args[k] for k in keys if isinstance(args.get(k), str)), None)


@functools.lru_cache(maxsize=4096)
def _lexer_class(name: str) -> type[Lexer] | None:
    """Pygments' lexer class for a file's base name (``find_lexer_class_for_filename``, which reads the base name
    alone), kept per name: each lookup matches every lexer's file patterns and lists every installed package's
    entry points (Pygments' plugins). None when no lexer matches."""
    return find_lexer_class_for_filename(name)


def _lexer_for(path: str) -> Lexer:
    """The lexer ``get_lexer_for_filename(path)`` gives (its class kept per base name: :func:`_lexer_class`), with
    ``stripnl=False``; the plain text lexer when none matches."""
    found = _lexer_class(os.path.basename(path))
    return found(stripnl=False) if found is not None else TextLexer(stripnl=False)


def _diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=f"{path} (before)", tofile=f"{path} (after)", n=3)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True)
class Readable:
    """A tool input read by what it is, before any highlighting: ``kind`` and ``label`` as in :class:`Rendered`,
    ``text`` the body as plain text (a command, a file's content, a diff, indented JSON), ``lexer`` the Pygments
    lexer that highlights it."""

    kind: str
    label: str
    text: str
    lexer: Lexer


def read_tool_input(tool: str | None, text: str) -> Readable:
    """The input ``text`` of a call to ``tool`` read by what it is (see the module docstring).

    Shell tools (``traces.vocabulary.SHELL_TOOLS``, any case): the command (the input itself, or the ``command``
    argument, a string or an argv list) as a shell block. JSON arguments with a path and ``content``: the file,
    highlighted by its extension. With ``old_string``/``new_string`` (each scaffold's spelling; ``edits`` lists
    too): a unified diff. Other JSON: indented. Anything else: the text.
    """
    name = (tool or "").lower()
    args = None
    if text[:1] in "{[":
        try:
            args = jsontext.loads(text)
        except ValueError:
            args = None
    if name in SHELL_TOOLS:
        command = args.get("command") if isinstance(args, dict) else (None if args is not None else text)
        if isinstance(command, list) and all(isinstance(c, str) for c in command):
            command = " ".join(command[2:]) if command[:2] in (["bash", "-lc"], ["bash", "-c"]) else " ".join(command)
        if isinstance(command, str):
            return Readable("shell", "", command, BashLexer(stripnl=False))
    if isinstance(args, dict):
        path = _first(args, _PATH_KEYS) or ""
        content = _first(args, _CONTENT_KEYS)
        old, new = _first(args, _OLD_KEYS), _first(args, _NEW_KEYS)
        if content is not None and path:
            return Readable("file", path, content, _lexer_for(path))
        edits = args.get("edits")
        if old is not None and new is not None:
            return Readable("diff", path, _diff(path, old, new), DiffLexer(stripnl=False))
        if isinstance(edits, list) and edits and all(isinstance(e, dict) for e in edits):
            parts = [_diff(path, _first(e, _OLD_KEYS) or "", _first(e, _NEW_KEYS) or "") for e in edits]
            return Readable("diff", path, "".join(parts), DiffLexer(stripnl=False))
    if args is not None:
        return Readable("json", "", json.dumps(args, indent=2, ensure_ascii=False), JsonLexer(stripnl=False))
    return Readable("text", "", text, TextLexer(stripnl=False))


def render_tool_input(tool: str | None, text: str) -> Rendered:
    """The input ``text`` of a call to ``tool`` as :func:`read_tool_input` reads it, escaped and highlighted
    (plain text only escaped)."""
    read = read_tool_input(tool, text)
    if read.kind == "text":
        return Rendered("text", "", escape(text))
    return Rendered(read.kind, read.label, _highlight(read.text, read.lexer))


def highlight_css() -> str:
    """The CSS of the highlighting classes (Pygments' default style under ``.hl``), for static/css/highlight.css."""
    return HtmlFormatter(style="default").get_style_defs(".hl")
