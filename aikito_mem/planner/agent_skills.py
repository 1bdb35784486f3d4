"""Per-agent skills directories ([N1]): pure, in the skills segment.

Every registry agent with a ``project_skills_path`` other than ``.agents/skills`` (e.g.
Claude Code's ``.claude/skills``) gets each selected skill linked there too:
``<checkout>/<dir>/<name>`` → ``<ws>/skills/<name>``, with [G2]'s table (missing →
CREATE; owned → NOOP; anything else → CONFLICT, preserved; an owned link of a deselected
skill → UNLINK; the agent's own entries preserved with a finding, never blocking).  The
directory (and any missing parent) is created only when one of its agents is detected
([G4]'s rule) or it already exists; otherwise each skill is a SKIP "agent not detected".
A directory, or a directory on the way to it, that is a symlink or not a directory is a
CONFLICT for its skills, preserved.  No I/O happens here.
"""

from __future__ import annotations

from aikito_mem.layout import too_long
from aikito_mem.model import (
    ABSENT,
    Action,
    Finding,
    Kind,
    Observed,
    Operation,
    PlannedTarget,
    Resource,
    SegmentName,
)
from aikito_mem.planner.skills import table
from aikito_mem.views.agent_skills import AgentSkillsView

R_AGENT_SKILLS = "N1"
R_OFFLINE = "G6"
_SEG = SegmentName.SKILLS


def _who(agents: tuple[str, ...]) -> str:
    return ", ".join(agents) or "no agent"


def offline(checkout: str, reason: str, dirs: tuple[PlannedTarget, ...],
            skills: tuple[Resource, ...]) -> list[Operation]:
    """A SKIP per skill and per agent directory for an offline checkout ([G6])."""
    return [
        Operation(Action.SKIP, R_OFFLINE, checkout, f"{checkout}/{d.rel}/{res.name}",
                  f"checkout offline: {reason}", resource=res.name, source=res.source,
                  segment=_SEG)
        for d in dirs for res in skills
    ]


def _blocked(checkout: str, view: AgentSkillsView, skills: tuple[Resource, ...]
             ) -> Operation | None:
    """The CONFLICT of a directory (or one on its way) that is not a real directory."""
    bad = next(((rel, obs) for rel, obs in view.parents
                if obs.exists and obs.kind is not Kind.DIR), None)
    if bad is None and view.root.exists and view.root.kind is not Kind.DIR:
        bad = (view.rel, view.root)
    if bad is None:
        return None
    rel, obs = bad
    where = f"{checkout}/{rel}"
    return Operation(
        Action.CONFLICT, R_AGENT_SKILLS, checkout, where,
        f"{where} is {obs.describe()}; expected a real directory to hold the skills of "
        f"{_who(view.agents)} ({checkout}/{view.rel})",
        remedy=f"move {where} out of the way and run again; aikito never writes through "
        "or replaces it", observed=obs, segment=_SEG,
        resource=skills[0].name if len(skills) == 1 else None,
    )


def plan_dir(
    checkout: str, view: AgentSkillsView, skills: tuple[Resource, ...], workspace: str,
    config_path: str, tracked: frozenset[str] = frozenset(),
    moved_from: str | None = None,
) -> tuple[list[Operation], list[Finding], list[tuple[str, Observed]]]:
    """(operations, findings, directories relied on) of one agent directory of one active
    checkout ([N1]); ``tracked``: the occupied targets git tracks ([L1]); ``moved_from``:
    the workspace's old root, whose links are relinked here too ([L4])."""
    ops: list[Operation] = []
    findings: list[Finding] = []
    if not skills and not view.entries:
        return ops, findings, []
    dirs = [*view.parents, (view.rel, view.root)]
    conflict = _blocked(checkout, view, skills)
    if conflict is not None:
        return [conflict], findings, dirs
    base = f"{checkout}/{view.rel}"
    if view.root.kind is Kind.ABSENT:
        longest = max((res.name for res in skills), key=len, default="")
        long = too_long(f"{base}/{longest}") if skills else None
        if long is not None:  # [E5]: a directory never to create
            return [Operation(
                Action.CONFLICT, R_AGENT_SKILLS, checkout, f"{base}/{res.name}",
                f"{base}/{longest}: {long}", remedy="shorten the project_skills_path of "
                "the agent registry, or move the checkout to a shorter path",
                resource=res.name, source=res.source, segment=_SEG, observed=ABSENT)
                for res in skills], findings, dirs
        if not view.detected:
            ops += [Operation(Action.SKIP, R_AGENT_SKILLS, checkout, f"{base}/{res.name}",
                              f"agent not detected — {_who(view.agents)}: its skills "
                              f"directory {view.rel} does not exist", resource=res.name,
                              source=res.source, segment=_SEG, observed=ABSENT)
                    for res in skills]
            return ops, findings, dirs
        created = (f"target missing (the directory {view.rel} is created: "
                   f"{_who(view.agents)} detected)")
        table(ops, findings, checkout, base, (), skills, workspace, config_path,
              rule=R_AGENT_SKILLS, created=created)
    else:
        table(ops, findings, checkout, base, view.entries, skills, workspace, config_path,
              rule=R_AGENT_SKILLS, whose=f"{_who(view.agents)}'s own, it seems",
              tracked=tracked, moved_from=moved_from)
    return ops, findings, dirs
