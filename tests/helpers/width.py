"""[U2] line width, as the tests check it: a line fits the width, or it is one thing that
must not be cut — a word (a path) alone, or one command of this tool alone (it pastes as
one line), with at most the bracket or punctuation around it."""

from __future__ import annotations

PROGRAMS = ("aikito ", "aikito-mem ")


def whole(line: str) -> bool:
    """Whether ``line`` is one word, or one command of this tool, alone on its line."""
    body = line.strip().lstrip("(").rstrip("),;:")
    if len(body.split()) <= 1:
        return True
    return body.startswith(PROGRAMS) and "(" not in body and ", " not in body


def too_wide(text: str, width: int) -> list[str]:
    """The lines of ``text`` wider than ``width`` that are not one word or command alone."""
    return [line for line in text.splitlines() if len(line) > width and not whole(line)]
