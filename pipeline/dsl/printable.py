"""Text from a config or the data, made safe to print in one line of a terminal.

A value quoted in an error (a CSV cell, a config key, an exception's message) may hold a newline that would break
the one-line error in two, or a terminal escape sequence (`\\x1b[2J` clears the screen) that the terminal would
obey. Printed through `printable`, every control character is shown as its escape instead.
"""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control characters (C0, DEL, C1), format characters (bidirectional overrides, zero-width ones) and the line and
# paragraph separators: none prints as itself.
_UNPRINTABLE = {"Cc", "Cf", "Zl", "Zp"}


def _escape(character: str) -> str:
    if character in _NAMED:
        return _NAMED[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with each control character escaped (`\\n`, `\\x1b`, `\\u202e`); unchanged when it has none."""
    if text.isprintable():  # the common case: isprintable() is False for every class below (and for odd spaces)
        return text
    return "".join(_escape(c) if unicodedata.category(c) in _UNPRINTABLE else c for c in text)
