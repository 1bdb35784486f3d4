"""How a text line names a path (SPEC §9): relative, so that a line fits a terminal.

- a target is shown relative to its checkout, whose header line names the checkout's
  label and absolute path; a memory target drops the ``.agents/memory/`` every memory
  target shares, so it reads as the reference ``agent.toml`` lists
  (``+ style.md -> memory/style.md``); the targets of the other segments keep their path
  inside the checkout (``.agents/skills/review``, ``AGENTS.md``);
- a source, or any other path inside the workspace, relative to the workspace, whose
  absolute path the project header names;
- inside a reason, a remedy or a finding, a path under the checkout is shown relative to
  the checkout (``.agents/memory/style.md``: a remedy can be run from the checkout root)
  and a path under the workspace relative to the workspace;
- the checkout itself and paths outside both stay absolute.

``--json`` never goes through this module: documents carry absolute paths.  Pure.
"""

from __future__ import annotations

import re

from aikito_mem.layout import MEMORY_DIR
from aikito_mem.model import Operation, SegmentName


def _under(path: str, base: str) -> str | None:
    """``path`` relative to ``base`` when it is strictly below it, else ``None``."""
    base = base.rstrip("/")
    if not base or not path.startswith(base + "/"):
        return None
    rest = path[len(base) + 1:]
    return rest or None


class Paths:
    """The relative names of one block of text: a checkout (or none) in a workspace."""

    def __init__(self, workspace: str | None, checkout: str | None = None) -> None:
        self.workspace = workspace
        self.checkout = checkout
        # Longest base first, so a workspace inside a checkout (or the reverse) is named
        # relative to the nearer one.  The filesystem root is never a base.
        bases = [b.rstrip("/") for b in (checkout, workspace) if b and b.rstrip("/")]
        bases.sort(key=len, reverse=True)
        self._pattern = None if not bases else re.compile(
            # A base only where a path starts: not in the middle of another path.
            r"(?<![^\s'\"(\[=,:;])(" + "|".join(re.escape(b + "/") for b in bases) + ")"
        )

    def target(self, op: Operation) -> str:
        """``op.target`` as its line shows it."""
        rel = _under(op.target, self.checkout) if self.checkout else None
        if rel is None:
            return op.target
        if op.segment is SegmentName.MEMORY:
            inside = _under(rel, MEMORY_DIR)
            if inside is not None:
                return inside
        return rel

    def source(self, path: str) -> str:
        """A source (or any workspace path): relative to the workspace."""
        rel = _under(path, self.workspace) if self.workspace else None
        return path if rel is None else rel

    def text(self, message: str) -> str:
        """A reason, remedy or finding with the checkout's and the workspace's paths
        shown relative."""
        if self._pattern is None:
            return message
        return self._pattern.sub("", message)
