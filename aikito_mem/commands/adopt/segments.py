"""[L5] adopt for every segment: besides a memory entry, ``aikito adopt TARGET`` takes

- a real directory at ``<checkout>/.agents/skills/NAME``, or at
  ``<checkout>/<project_skills_path>/NAME`` of a registry agent ([N1]: an agent's own
  skills directory, such as ``.claude/skills``): moved to ``<ws>/skills/NAME``, ``NAME``
  added to ``skills`` in ``agent.toml`` (the one compare-and-swap edit), linked back at
  the place it came from — and only there: the skill's other targets of the checkout
  (``.agents/skills/NAME``, the other agents' directories) are the next sync's, which
  the report names (:attr:`Adoption.rest`);
- a regular file at an instruction target of the registry (``AGENTS.md``,
  ``.claude/CLAUDE.md``, …) while ``<ws>/projects/<p>/AGENTS.md`` is absent or empty:
  moved there (over the empty file, re-checked just before it is removed), and every
  instruction target of that checkout linked.

An identical copy (``<ws>/skills/NAME`` or an ``AGENTS.md`` with the same bytes) is
replaced by the link under [H2]'s rules; a differing one is refused with a diff (exit 1);
an entry git tracks in the checkout's repository is refused, "it belongs to the
repository" (exit 1, [L1]).  As for memory, the last check is the engine's own: the pure
planners are run on the world as it will be once TARGET has moved, and TARGET's
operation must be a CREATE.  :func:`validate` writes nothing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import attrs

from aikito_mem import layout
from aikito_mem.commands.adopt import distinct, treemove
from aikito_mem.commands.adopt.checks import (
    TAKES,
    AfterMove,
    destination_method,
    edited_config,
    missing_dirs,
    read_config,
)
from aikito_mem.commands.adopt.values import Adoption, EntryType, Method, link_refused
from aikito_mem.errors import EXIT_STALE, AdoptFailed, AdoptRefused
from aikito_mem.model import (
    ABSENT,
    Action,
    InstructionSource,
    InstructionState,
    Kind,
    Observed,
    Operation,
    ProjectConfig,
    SegmentName,
)
from aikito_mem.values import replace
from aikito_mem.world.observe import Observer, generation

if TYPE_CHECKING:
    from aikito_mem.config.discovery import Workspace
    from aikito_mem.config.registry import InstructionTarget, Registry


@attrs.frozen
class Where:
    """The checkout holding TARGET and the place it names; alone, [E5] TARGET absent."""

    ws: Workspace
    config: ProjectConfig
    label: str
    checkout: str
    #: Physical path of TARGET, and relative to the checkout root.
    physical: str
    rel: str

    def found(self, st: os.stat_result, kind: EntryType) -> Found:
        """As :class:`Found`, with the destination's ``lstat`` for TARGET's."""
        place = {f.name: getattr(self, f.name) for f in attrs.fields(Where)}
        return Found(**place, st=st, kind=kind)


@attrs.frozen
class Found(Where):
    """What :func:`aikito_mem.commands.adopt.plan.validate` established before handing
    over: the checkout holding TARGET and TARGET itself (its ``lstat``)."""

    st: os.stat_result
    kind: EntryType


def validate(found: Found, environ: Mapping[str, str] | None) -> Adoption:
    """Every check of adopting a skill directory or an instruction file; no write."""
    from aikito_mem.config.registry_read import load_registry

    rel = found.rel
    registry = load_registry(found.ws.root)
    # [N1]: ``.agents/skills`` and every agent's own skills directory, alike.
    for where in (layout.SKILLS_DIR, *(d.path for d in registry.skill_dirs)):
        if rel.startswith(f"{where}/") and "/" not in rel[len(where) + 1:]:
            return _skill(found, where, rel[len(where) + 1:], registry, environ)
    targets = {t.path: t for t in registry.targets}
    if rel in targets:
        return _instruction(found, targets[rel], environ)
    raise AdoptRefused(f"{found.physical} is not a place adopt takes: it takes {TAKES}; "
                       f"{skill_dirs_text(registry)}", code="outside", path=found.physical)


def skill_dirs_text(registry: Registry) -> str:
    """The per-agent skills directories of the registry, for a refusal's message."""
    if not registry.skill_dirs:
        return ("no agent of this workspace's registry names a project_skills_path "
                f"other than {layout.SKILLS_DIR}")
    listing = ", ".join(f"{d.path} ({', '.join(d.agents)})" for d in registry.skill_dirs)
    return f"the agents' own skills directories here: {listing}"


def _home(environ: Mapping[str, str] | None) -> str:
    from aikito_mem.config.discovery import home_directory

    return home_directory(environ) or ""


def refuse_tracked(checkout: str, rel: str, physical: str) -> None:
    """[L1]: an entry git tracks in the checkout's repository is the repository's own —
    never moved into the workspace (git missing or slow: treated as untracked, as a sync
    does)."""
    from aikito_mem.world import git

    found = git.tracked(checkout, [rel])
    if isinstance(found, frozenset) and rel in found:
        raise AdoptRefused(
            f"{physical} is tracked by git: it belongs to the repository, not to aikito — "
            "adopt never moves a committed file; keep it (a sync leaves it alone), or "
            "untrack it with git first", code="tracked", path=physical)


# --------------------------------------------------------------------------- skills


def _skill(found: Found, where: str, name: str, registry: Registry,
           environ: Mapping[str, str] | None) -> Adoption:
    """A skill directory at ``<checkout>/<where>/NAME`` (``where``: ``.agents/skills`` or
    an agent's ``project_skills_path``)."""
    from aikito_mem.config.names import component_problem

    physical, config = found.physical, found.config
    if found.kind is not EntryType.DIRECTORY:
        raise AdoptRefused(
            f"{physical} is a regular file; a skill is a directory (SKILL.md and what it "
            "needs) — move the file where it belongs", code="file_type", path=physical)
    problem = component_problem(name)
    if problem is not None:
        raise AdoptRefused(f"{physical} cannot become a skill: {name!r} {problem} — rename "
                           "it first", code="reference_invalid", path=physical)
    refuse_tracked(found.checkout, found.rel, physical)
    ws = found.ws.root
    destination = layout.skill_source(ws, name)
    # [H2]: the identical-copy check compares two distinct trees — a mount or a symlink
    # on TARGET's side was refused before (plan.validate); <ws>/skills/NAME a bind mount
    # of TARGET (one directory, two names) is refused here, else its "copy" is removed.
    distinct.distinct_from_destination(physical, found.st, destination)
    missing = missing_dirs(ws, f"{layout.SKILLS_ROOT}/{name}", destination)
    home = _home(environ)
    known = name in config.skills
    data = read_config(config, physical, edit=not known)
    new, after = ((None, config) if known else
                  edited_config(config, data, name, home, SegmentName.SKILLS))
    method, entries = destination_method(physical, destination, found.kind, found.st, missing)
    ops = _predict_skill(found, after, where, name, tuple(missing), registry, environ)
    link, conflicts = _own(ops, found.physical)
    # [N1]: adopt links back exactly what it took; the skill's other targets here are
    # the next sync's (reported, with the command that links them).
    rest = tuple(op for op in ops if op.action is Action.CREATE and op.resource == name
                 and op is not link)
    return attrs.evolve(
        _adoption(found, name, destination, data, new, missing, method, link, conflicts,
                  entries, SegmentName.SKILLS), rest=rest)


def _predict_skill(found: Found, config: ProjectConfig, where: str, name: str,
                   missing: tuple[str, ...], registry: Registry,
                   environ: Mapping[str, str] | None) -> list[Operation]:
    """The skills planners on the world after the move (the content at
    ``<ws>/skills/NAME``, nothing at TARGET): every operation of the checkout's skills
    segment, ``.agents/skills`` and each agent's own directory ([N1])."""
    from aikito_mem.planner import agent_skills as planner_agent_skills
    from aikito_mem.planner import skills as planner_skills
    from aikito_mem.world.agent_skills import agent_skills_views
    from aikito_mem.world.segments import Detection, resolve_skills, skills_view

    ws, checkout = found.ws.root, found.checkout
    present = {d: Observed(Kind.DIR) for d in missing}
    present[layout.skill_source(ws, name)] = Observed(Kind.DIR)
    resources = resolve_skills(config.skills, ws, AfterMove(present))
    observer = Observer()
    agents = observer.lstat(f"{checkout}/{layout.AGENTS_DIR}")
    view = skills_view(checkout, agents, observer)
    if where == layout.SKILLS_DIR:
        view = replace(view, entries=_without(view.entries, name))
    ops, _findings, _dirs = planner_skills.plan_checkout(checkout, agents, view, resources,
                                                         ws, config.config_path)
    detect = Detection(registry, environ if environ is not None else os.environ,
                       _home(environ) or None)
    for aview in agent_skills_views(checkout, registry.skill_dirs, bool(config.skills),
                                    detect, observer):
        if aview.rel == where:
            aview = replace(aview, entries=_without(aview.entries, name))
        a_ops, _findings, _dirs = planner_agent_skills.plan_dir(
            checkout, aview, resources, ws, config.config_path)
        ops += a_ops
    return ops


def _without(entries: tuple[tuple[str, Observed], ...], name: str
             ) -> tuple[tuple[str, Observed], ...]:
    """A directory's entries once ``name`` has moved away."""
    return tuple((n, o) for n, o in entries if n != name)


def _own(ops: list[Operation], target: str, resumed_from: str | None = None
         ) -> tuple[Operation, tuple[Operation, ...]]:
    own = next((op for op in ops if op.target == target), None)
    others = tuple(op for op in ops if op.action is Action.CONFLICT and op.target != target)
    if own is None or own.action is not Action.CREATE:
        raise link_refused(target, own, resumed_from)
    return own, others


# --------------------------------------------------------------------------- instructions


def _instruction(found: Found, target: InstructionTarget,
                 environ: Mapping[str, str] | None) -> Adoption:
    from aikito_mem.world.segments import instruction_source

    physical, config, ws = found.physical, found.config, found.ws.root
    if found.kind is not EntryType.FILE:
        raise AdoptRefused(
            f"{physical} is a directory; an instruction target is a file (the agent reads "
            "it) — move the directory out of the way", code="file_type", path=physical)
    refuse_tracked(found.checkout, found.rel, physical)
    source = instruction_source(ws, config.name, Observer())
    destination = source.path
    distinct.distinct_from_destination(physical, found.st, destination)
    empty: tuple[int, int, int, int] | None = None
    if source.state is InstructionState.UNSAFE:
        raise AdoptRefused(f"{source.problem}; adopt never writes through it — fix the "
                           "project's AGENTS.md first", code="destination_parent",
                           path=destination)
    if source.state is InstructionState.EMPTY:
        st = os.lstat(destination)
        if not stat.S_ISREG(st.st_mode):  # a symlink to an empty file: never written through
            raise AdoptRefused(
                f"{destination} is a symlink to an empty file; adopt never writes through a "
                "symlink — put the instructions in the file it names yourself",
                code="destination_parent", path=destination)
        empty = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        method = Method.RENAME if os.lstat(os.path.dirname(destination)).st_dev == \
            found.st.st_dev else Method.COPY
        entries: tuple[treemove.Entry, ...] = ()
    else:  # absent (moved there) or with content (replaced only when identical)
        method, entries = destination_method(physical, destination, found.kind, found.st, [])
    data = read_config(config, physical, edit=False)
    links = _predict_instructions(found, target, environ)
    own = next(op for op in links if op.target == physical)
    return attrs.evolve(
        _adoption(found, found.rel, destination, data, None, [], method, own,
                  tuple(op for op in links if op.action is Action.CONFLICT),
                  entries, SegmentName.INSTRUCTIONS),
        links=tuple(op for op in links if op.action is Action.CREATE and op is not own),
        empty_destination=empty)


def _predict_instructions(found: Found, target: InstructionTarget,
                          environ: Mapping[str, str] | None,
                          resumed_from: str | None = None) -> list[Operation]:
    """The instructions planner on the world after the move (``AGENTS.md`` with content,
    nothing at TARGET): TARGET's CREATE first checked, then every operation of the
    checkout's instruction targets."""
    from aikito_mem.config.registry_read import load_registry
    from aikito_mem.planner import instructions as planner_instructions
    from aikito_mem.world.segments import Detection, instructions_view

    ws, checkout = found.ws.root, found.checkout
    registry = load_registry(ws)
    observer = Observer()
    agents = observer.lstat(f"{checkout}/{layout.AGENTS_DIR}")
    detect = Detection(registry, environ if environ is not None else os.environ,
                       _home(environ) or None)
    view = instructions_view(checkout, agents, registry.targets, detect, observer)
    view = replace(view, targets=tuple(
        replace(t, observed=ABSENT) if t.rel == target.path else t
        for t in view.targets))
    source = InstructionSource(layout.instructions_source(ws, found.config.name),
                               InstructionState.CONTENT)
    ops, _findings, _dirs = planner_instructions.plan_checkout(checkout, source, view)
    _own(ops, found.physical, resumed_from)
    return ops


def _adoption(found: Found, ref: str, destination: str, data: bytes, new: bytes | None,
              missing: list[str], method: Method, link: Operation,
              conflicts: tuple[Operation, ...], entries: tuple[treemove.Entry, ...],
              segment: SegmentName) -> Adoption:
    # [E5] resume: ``found.st`` is the destination's, and so is the identity.
    at = destination if method is Method.RESUME else found.physical
    return Adoption(
        workspace=found.ws.root, project=found.config.name, checkout=found.checkout,
        target=found.physical, reference=ref, destination=destination, kind=found.kind,
        identity=(found.st.st_dev, found.st.st_ino, generation(at)),
        config_path=found.config.config_path, config_bytes=data, new_config=new,
        missing_dirs=tuple(missing), method=method, link=link, conflicts=conflicts,
        entries=entries, segment=segment, found_via=found.ws.found_via)


def recheck_empty(a: Adoption) -> None:
    """Just before the move: the empty ``AGENTS.md`` validated is still that empty file
    (same identity, size and time) — else nothing is written (exit 3)."""
    if a.empty_destination is None:
        return
    try:
        st = os.lstat(a.destination)
        now = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    except FileNotFoundError:
        now = None
    if now != a.empty_destination:
        raise AdoptFailed(f"{a.destination} changed since it was examined (it was empty); "
                          "nothing was written — run adopt again", code="stale",
                          content_at=a.target, exit_code=EXIT_STALE, outcome="stale")


# --------------------------------------------------------------------------- resume


def content_at(path: str, kinds: tuple[Callable[[int], bool], ...]) -> os.stat_result | None:
    """The ``lstat`` of ``path`` when it is one of ``kinds`` (never a symlink), else
    ``None``."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if any(k(st.st_mode) for k in kinds) else None


def resume(where: Where, environ: Mapping[str, str] | None) -> Adoption | None:
    """[E5] TARGET (a skill directory's or an instruction target's place) is absent and
    its content is at its destination in the workspace — an adopt killed after its move:
    the adoption that finishes it (``method`` ``resume``: nothing moves), or ``None``
    when this is not that state."""
    from aikito_mem.config.registry_read import load_registry

    registry = load_registry(where.ws.root)
    rel = where.rel
    for at in (layout.SKILLS_DIR, *(d.path for d in registry.skill_dirs)):
        if rel.startswith(f"{at}/") and "/" not in rel[len(at) + 1:]:
            return _resume_skill(where, at, rel[len(at) + 1:], registry, environ)
    target = {t.path: t for t in registry.targets}.get(rel)
    return None if target is None else _resume_instruction(where, target, environ)


def _resume_skill(where: Where, at: str, name: str, registry: Registry,
                  environ: Mapping[str, str] | None) -> Adoption | None:
    from aikito_mem.config.names import component_problem

    destination = layout.skill_source(where.ws.root, name)
    st = content_at(destination, (stat.S_ISDIR,))
    if st is None or component_problem(name) is not None:
        return None
    refuse_tracked(where.checkout, where.rel, where.physical)
    found, config = where.found(st, EntryType.DIRECTORY), where.config
    known = name in config.skills
    data = read_config(config, where.physical, edit=not known)
    new, after = ((None, config) if known else
                  edited_config(config, data, name, _home(environ), SegmentName.SKILLS))
    ops = _predict_skill(found, after, at, name, (), registry, environ)
    link, conflicts = _own(ops, where.physical, destination)
    rest = tuple(op for op in ops if op.action is Action.CREATE and op.resource == name
                 and op is not link)
    return attrs.evolve(
        _adoption(found, name, destination, data, new, [], Method.RESUME, link, conflicts,
                  (), SegmentName.SKILLS), rest=rest)


def _resume_instruction(where: Where, target: InstructionTarget,
                        environ: Mapping[str, str] | None) -> Adoption | None:
    from aikito_mem.world.segments import instruction_source

    source = instruction_source(where.ws.root, where.config.name, Observer())
    st = content_at(source.path, (stat.S_ISREG,))
    if source.state is not InstructionState.CONTENT or st is None:
        return None
    refuse_tracked(where.checkout, where.rel, where.physical)
    found = where.found(st, EntryType.FILE)
    data = read_config(where.config, where.physical, edit=False)
    links = _predict_instructions(found, target, environ, source.path)
    own = next(op for op in links if op.target == where.physical)
    return attrs.evolve(
        _adoption(found, where.rel, source.path, data, None, [], Method.RESUME, own,
                  tuple(op for op in links if op.action is Action.CONFLICT), (),
                  SegmentName.INSTRUCTIONS),
        links=tuple(op for op in links if op.action is Action.CREATE and op is not own))
