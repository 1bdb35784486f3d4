"""The skills segment's planner ([G2]): pure, like the memory planner.

Per active checkout and selected skill ``N``: source ``<ws>/skills/N`` (a directory reached
safely inside ``<ws>/skills``), target ``<checkout>/.agents/skills/N``, link literal the
canonical source.  The [P1] table applies; stale entries of ``.agents/skills`` that are
owned links to ``<ws>/skills/<that name>`` are unlinked; everything else there is
preserved with a warning.  No I/O happens here.
"""

from __future__ import annotations

from aikito_mem.config.names import entry_problem
from aikito_mem.layout import (
    AGENTS_DIR,
    SKILLS_DIR,
    moved_literal,
    moved_owner,
    relink_base,
    skill_source,
    skill_target,
    skills_root,
)
from aikito_mem.model import (
    ABSENT,
    Action,
    Finding,
    Kind,
    Observed,
    Operation,
    Resource,
    SegmentName,
)
from aikito_mem.planner import R_MOVED
from aikito_mem.planner.memory import owns
from aikito_mem.views import SkillsView

R_SKILL = "G2"
R_OFFLINE = "G6"
#: The rule of a SKIP for a target git tracks ([L1]): verification re-checks its entry.
R_TRACKED = "L1"
TRACKED_REASON = "tracked by git"
_SEG = SegmentName.SKILLS
# Looked up once (an enum member read off its class is slow): read once per skill.
_ABSENT, _LINK = Kind.ABSENT, Kind.LINK
_CONFLICT = Action.CONFLICT


def _op(action: Action, checkout: str, target: str, reason: str, *,
        resource: str | None = None, source: str | None = None, remedy: str | None = None,
        observed: Observed = ABSENT, rule: str = R_SKILL) -> Operation:
    return Operation(action, rule, checkout, target, reason, resource=resource,
                     source=source, remedy=remedy, observed=observed, segment=_SEG)


#: What may be the repository's own at a target ([L1]): git tracks a symlink as a file
#: (mode 120000), so a committed link is tracked exactly like a committed file.
TRACKABLE = (Kind.FILE, Kind.DIR, Kind.LINK)


def is_tracked(target: str, obs: Observed, tracked: frozenset[str]) -> bool:
    """Whether the entry ``obs`` at ``target`` is the repository's own ([L1]): git
    tracks that path (``tracked``, as observed) and a file, directory or link is there.
    Asked only of a target that would otherwise be a CONFLICT: ownership comes first."""
    return target in tracked and obs.kind in TRACKABLE


def tracked_finding(target: str, obs: Observed, what: str) -> Finding:
    """The warning beside a SKIP for a tracked target ([L1]): it names no remedy that
    would move or delete the repository's file."""
    return Finding(
        "git.tracked_target", "warning",
        f"{target} is {obs.describe()} tracked by git: it belongs to the repository, so "
        f"aikito leaves it as it is and does not link {what} there", target,
    )


def offline(checkout: str, reason: str, skills: tuple[Resource, ...]) -> list[Operation]:
    """A SKIP per skill for an offline checkout ([G6])."""
    return [
        Operation(Action.SKIP, R_OFFLINE, checkout, skill_target(checkout, res.name),
                  f"checkout offline: {reason}", resource=res.name, source=res.source,
                  segment=_SEG)
        for res in skills
    ]


def _stale(checkout: str, base: str, name: str, obs: Observed, workspace: str,
           ops: list[Operation], findings: list[Finding], *, rule: str = R_SKILL,
           whose: str | None = None, moved_from: str | None = None) -> None:
    """An entry of a skills directory no skill selects: aikito's link unlinked (also one
    into the old root ``moved_from`` names, [L4]), an entry aikito does not own at its
    relink name a CONFLICT ([L8]), anything else preserved with a warning (``whose``:
    the agent's own directory, [N1])."""
    target = f"{base}/{name}"
    # A relink's temporary name ([L4]) is owned as the skill it stands for.
    stands_for = relink_base(name)
    source = skill_source(workspace, stands_for or name)
    if obs.kind is Kind.LINK and entry_problem(name, single=True) is None:
        # [H3]: whatever bytes its name holds — the writer's guard applies this rule.
        owned = owns(obs.literal, base, (source,)) is not None
        moved = not owned and moved_owner(obs.literal, moved_from, workspace,
                                          (source,)) is not None
        if owned or moved:
            ops.append(_op(Action.UNLINK, checkout, target,
                           "the leftover of an interrupted relink" if stands_for else
                           f"no longer wanted: aikito's link (into {moved_from}) for a skill "
                           "that was removed" if moved else
                           "no longer wanted: aikito's link for a skill that was removed",
                           resource=name, source=source, observed=obs, rule=rule))
            return
    if stands_for is not None:
        from aikito_mem.planner.remedies import relink_name_conflict

        reason, remedy = relink_name_conflict(target, f"{base}/{stands_for}", obs)
        ops.append(_op(Action.CONFLICT, checkout, target, reason, remedy=remedy,
                       resource=name, source=source, observed=obs, rule=rule))
        return
    # No remedy: an agent's own skill (often committed to git, which is not asked about
    # entries that are no target) is the user's; [L1] — never a hint to delete it.
    made = f" ({whose})" if whose else ""
    findings.append(Finding(
        "skills.foreign_entry", "warning",
        f"preserved {target}: {obs.describe()} that aikito did not create{made}; it is "
        "left untouched", target,
    ))


def _target(checkout: str, base: str, res: Resource, obs: Observed, workspace: str,
            config_path: str, *, rule: str = R_SKILL, created: str = "target missing",
            moved_from: str | None = None, tracked: bool = False) -> Operation:
    """[G2]'s table at ``<base>/<name>`` of a selected skill (``tracked``: git tracks what
    is there, [L1] — a remedy then never names adopt)."""
    target = f"{base}/{res.name}"

    def op(action: Action, reason: str, remedy: str | None = None) -> Operation:
        return _op(action, checkout, target, reason, remedy=remedy, resource=res.name,
                   source=res.source, observed=obs, rule=rule)

    if res.problem is not None:
        from aikito_mem.planner.remedies import skill_dir_remedy

        return op(Action.CONFLICT, res.problem,
                  # [L5]: the content is here, not in the workspace: adopt moves it there.
                  skill_dir_remedy(target, res, config_path)
                  if res.missing and obs.kind is Kind.DIR and not tracked else
                  f"create the directory {res.source}, or remove {res.name!r} from skills "
                  f"in {config_path}" if res.missing else
                  f"make {res.source} a real directory inside {skills_root(workspace)}, or "
                  f"remove {res.name!r} from skills in {config_path}")
    if obs.kind is _ABSENT:
        return op(Action.CREATE, created)
    if obs.kind is _LINK and owns(obs.literal, base, (res.source,)) is not None:
        return op(Action.NOOP, "already linked")
    if obs.kind is Kind.LINK and obs.literal == moved_literal(moved_from, workspace,
                                                              res.source):
        # [L4]: the same skill under the workspace's old root.
        return _op(Action.CREATE, checkout, target, f"relinked from {moved_from}",
                   resource=res.name, source=res.source, observed=obs, rule=R_MOVED)
    from aikito_mem.planner.remedies import foreign_link_remedy, skill_dir_remedy

    return op(Action.CONFLICT, f"found {obs.describe()}; expected a symlink to {res.source!r}",
              foreign_link_remedy(target) if obs.kind is Kind.LINK else
              # [L5]: adopt resolves it, in every skills directory ([N1]).
              skill_dir_remedy(target, res, config_path) if obs.kind is Kind.DIR else
              f"move {target} out of the way (aikito never overwrites it), or remove "
              f"{res.name!r} from skills in {config_path}")


def plan_checkout(
    checkout: str,
    agents: Observed,
    view: SkillsView,
    skills: tuple[Resource, ...],
    workspace: str,
    config_path: str,
    tracked: frozenset[str] = frozenset(),
    moved_from: str | None = None,
) -> tuple[list[Operation], list[Finding], list[tuple[str, Observed]]]:
    """(operations, findings, directories relied on) of one active checkout ([G2]).

    ``agents`` is ``.agents`` of the checkout; when it is not a real directory the memory
    planner reports the checkout-level conflict for memory, and this one for skills.
    ``tracked``: the targets (absolute paths) occupied by a file, directory or link
    that git tracks, as observed ([L1]).
    """
    base = f"{checkout}/{SKILLS_DIR}"
    ops: list[Operation] = []
    findings: list[Finding] = []
    if not skills and not view.entries:
        return ops, findings, []
    if agents.exists and agents.kind is not Kind.DIR:
        target = f"{checkout}/{AGENTS_DIR}"
        ops.append(_op(Action.CONFLICT, checkout, target,
                       f"{target} is {agents.describe()}; expected a real directory",
                       remedy=f"move {target} out of the way and run again; aikito never "
                       "writes through or replaces it", observed=agents))
        return ops, findings, [(AGENTS_DIR, agents)]
    dirs = [(AGENTS_DIR, agents), (SKILLS_DIR, view.root)]
    if view.root.exists and view.root.kind is not Kind.DIR:
        ops.append(_op(Action.CONFLICT, checkout, base,
                       f"{base} is {view.root.describe()}; expected a real directory",
                       remedy=f"move {base} out of the way and run again; aikito never "
                       "writes through or replaces it", observed=view.root))
        return ops, findings, dirs
    table(ops, findings, checkout, base, view.entries, skills, workspace, config_path,
          tracked=tracked, moved_from=moved_from)
    ops.sort(key=lambda op: op.target)
    findings.sort(key=lambda f: f.path or "")
    return ops, findings, dirs


def table(
    ops: list[Operation], findings: list[Finding], checkout: str, base: str,
    listing: tuple[tuple[str, Observed], ...], skills: tuple[Resource, ...], workspace: str,
    config_path: str, *, rule: str = R_SKILL, created: str = "target missing",
    whose: str | None = None, tracked: frozenset[str] = frozenset(),
    moved_from: str | None = None,
) -> None:
    """[G2]'s table in the skills directory ``base`` (a real directory, or one that will
    be created): each selected skill linked (CREATE / NOOP / CONFLICT), each owned link of
    a deselected skill unlinked, every other entry preserved with a warning finding; a
    target git tracks ([L1], ``tracked``) skipped."""
    entries = dict(listing)
    selected = {res.name for res in skills}
    for name, obs in listing:
        if name not in selected:
            _stale(checkout, base, name, obs, workspace, ops, findings, rule=rule,
                   whose=whose, moved_from=moved_from)
    for res in skills:
        obs = entries.get(res.name, ABSENT)
        op = _target(checkout, base, res, obs, workspace, config_path, rule=rule,
                     created=created, moved_from=moved_from,
                     tracked=f"{base}/{res.name}" in tracked)
        if res.problem is None and op.action is _CONFLICT and is_tracked(
                op.target, obs, tracked):
            # [L1]: the repository's own skill (a directory, or a committed symlink) —
            # never a conflict, never to be moved; an owned link stays NOOP above.
            op = _op(Action.SKIP, checkout, op.target, TRACKED_REASON, resource=res.name,
                     source=res.source, observed=obs, rule=R_TRACKED)
            findings.append(tracked_finding(op.target, obs, f"skill {res.name}"))
        ops.append(op)
