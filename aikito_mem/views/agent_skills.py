"""The view of one per-agent skills directory ([N1]): built only by a run whose registry
names such a directory (``world/agent_skills`` observes it, ``planner/agent_skills``
plans it), so a plain sync never builds its class ([§12]).  No I/O."""

from __future__ import annotations

from aikito_mem.model import ABSENT, Observed
from aikito_mem.values import Record


class AgentSkillsView(Record):
    """One per-agent skills directory of one active checkout, as observed ([N1])."""

    #: Relative to the checkout root, e.g. ``.claude/skills``.
    rel: str
    #: The agents whose ``project_skills_path`` this is (sorted).
    agents: tuple[str, ...] = ()
    #: Whether any of them is detected on this machine (asked only when it matters: the
    #: directory is missing and a skill would be linked there).
    detected: bool = False
    #: The directory itself (a symlink carries its literal).
    root: Observed = ABSENT
    #: Its entries (one level), by name, sorted — when it is a real directory.
    entries: tuple[tuple[str, Observed], ...] = ()
    #: Each ancestor directory, outermost first, up to the first one that is missing or
    #: not a real directory.
    parents: tuple[tuple[str, Observed], ...] = ()
