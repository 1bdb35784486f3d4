"""What ``aikito adopt TARGET`` will do: the frozen values of an adoption and of its
report, and :func:`validate`, which makes every check and writes nothing.

``--dry-run`` is :func:`validate` alone; the real run calls it again under the checkout
lock, immediately before its first write, so the dry run makes every check the real run
makes ([E7], [E9]).  The last check is the engine's own: the planner is run on the world
as it will be once TARGET has moved (``REL`` listed, the content at ``<ws>/memory/REL``,
nothing at TARGET), and TARGET's operation in that plan must be a CREATE — otherwise
nothing is moved.  Other conflicts of the checkout are reported, and never stop an
adoption ([P3] concerns sync).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import TYPE_CHECKING

from aikito_mem import layout
from aikito_mem.commands.adopt import distinct
from aikito_mem.commands.adopt.checks import (
    TAKES,
    AfterMove,
    checkout_dirs,
    describe,
    destination_method,
    edited_config,
    listed,
    lstat_or_none,
    missing_dirs,
    read_config,
)
from aikito_mem.commands.adopt.values import (
    CONTRACT_VERSION,
    SCHEMA,
    Adoption,
    AdoptOutcome,
    AdoptReport,
    EntryType,
    Method,
    Step,
    StepResult,
    StepStatus,
    link_refused,
    outcome_of,
)
from aikito_mem.errors import AdoptRefused
from aikito_mem.layout import MEMORY_DIR, SKILLS_DIR, is_notes, memory_source, memory_target
from aikito_mem.model import Action, Kind, Observed, Operation, ProjectConfig
from aikito_mem.values import replace
from aikito_mem.world.observe import Observer, generation

if TYPE_CHECKING:
    from aikito_mem.config.discovery import Workspace

__all__ = [
    "CONTRACT_VERSION", "SCHEMA", "TAKES", "AdoptOutcome", "AdoptReport", "Adoption",
    "AfterMove", "EntryType", "Method", "Step", "StepResult", "StepStatus",
    "destination_method", "edited_config", "listed", "missing_dirs", "outcome_of",
    "predict_link", "read_config", "validate",
]


# ---------------------------------------------------------------------------- validation


def _find_checkout(physical: str, ws_root: str, only: str | None,
                   environ: Mapping[str, str] | None) -> tuple[ProjectConfig, str, str]:
    """``(config, label, checkout root)`` whose active checkout holds ``physical`` (the one
    shared search: :func:`aikito_mem.world.containment.find_checkouts`; the root is the
    spelling ``physical`` was found under, e.g. through a bind mount)."""
    from aikito_mem.world.containment import find_checkouts

    search = find_checkouts(physical, ws_root, only=only, environ=environ)
    found = [(m.config, m.label, m.root) for m in search.matches]
    broken = list(search.broken)
    if len(found) == 1:
        return found[0]
    if found:
        listing = ", ".join(f"{c.name} ({p})" for c, _, p in found)
        raise AdoptRefused(
            f"{physical} is in a checkout registered for several projects: {listing} — "
            "choose one with --project NAME", code="ambiguous_project", path=physical)
    if not _runtime_place(physical, ws_root):
        raise AdoptRefused(
            f"{physical} is not inside an active checkout; adopt only takes {TAKES}",
            code="outside", path=physical)
    skipped = (f" (projects with a broken agent.toml were not searched: {', '.join(broken)})"
               if broken else "")
    scope = f"project {only!r}" if only is not None else "any project"
    raise AdoptRefused(
        f"{physical} is not in an active checkout registered for {scope} "
        f"of workspace {ws_root}{skipped} — register the checkout first "
        "(aikito sync project NAME PATH)", code="not_registered", path=physical)


def _runtime_place(physical: str, ws_root: str) -> bool:
    """Whether ``physical`` is below a place adopt takes from (``.agents/memory``,
    ``.agents/skills``, an agent's ``project_skills_path``, [N1]) — what tells "not
    registered" from "not a place adopt takes" outside every checkout."""
    if f"/{MEMORY_DIR}/" in physical or f"/{SKILLS_DIR}/" in physical:
        return True
    from aikito_mem.config.registry_read import load_registry
    from aikito_mem.errors import ConfigError

    try:
        dirs = load_registry(ws_root).skill_dirs
    except ConfigError:  # a broken registry is a sync's error, not this message's
        return False
    return any(f"/{d.path}/" in physical for d in dirs)


def _target(given: str) -> tuple[os.stat_result, EntryType]:
    st = lstat_or_none(given)
    if st is None:
        raise AdoptRefused(f"nothing to adopt: {given} does not exist", code="missing",
                           path=given)
    if stat.S_ISLNK(st.st_mode):
        raise AdoptRefused(
            f"{given} is a symlink; adopt moves only a real file or directory (a symlink "
            "holds no content — if it is aikito's link there is nothing to adopt; remove "
            "a foreign link yourself)", code="symlink", path=given)
    if stat.S_ISREG(st.st_mode):
        return st, EntryType.FILE
    if stat.S_ISDIR(st.st_mode):
        return st, EntryType.DIRECTORY
    raise AdoptRefused(f"{given} is {describe(st)}; expected a regular file or a directory",
                       code="file_type", path=given)


def _same_dir(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one directory by the kernel's identity ([H2]): the
    checkout TARGET was named under is the one it physically is in — ``co/.claude`` a
    symlink to another checkout's ``.claude`` ends with the same words, yet is not."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def predict_link(config: ProjectConfig, ws: Workspace, label: str, checkout: str, rel: str,
                 kind: EntryType, missing: tuple[str, ...], home: str, *,
                 resumed: bool = False) -> tuple[Operation, tuple[Operation, ...]]:
    """The engine's plan of this checkout once TARGET has moved: TARGET's CREATE and the
    other conflicts.  :class:`AdoptRefused` when TARGET would not be linked (``resumed``:
    the content is at the destination already, [E5])."""
    from aikito_mem.model import CheckoutState
    from aikito_mem.planner.memory import build_plan
    from aikito_mem.world import checkouts as _checkouts
    from aikito_mem.world.resources import resolve

    destination = memory_source(ws.root, rel)
    present = {d: Observed(Kind.DIR) for d in missing}
    present[destination] = Observed(Kind.FILE if kind is EntryType.FILE else Kind.DIR)
    resources = resolve(config, ws.root, AfterMove(present))
    view = _checkouts.observe(_checkouts.Slot(label, checkout, CheckoutState.ACTIVE),
                              Observer())
    view = replace(view, entries=tuple(
        (r, o) for r, o in view.entries if r != rel and not r.startswith(f"{rel}/")))
    plan = build_plan(config=config, workspace=ws.root, workspace_source=ws.found_via,
                      resources=resources, checkouts=(view,), explicit_path=checkout,
                      home=home)
    target = memory_target(checkout, rel)
    own = next((op for op in plan.operations if op.target == target), None)
    others = tuple(op for op in plan.conflicts if op.target != target)
    if own is None or own.action is not Action.CREATE:
        raise link_refused(target, own, destination if resumed else None)
    return own, others


def _check_notes(config: ProjectConfig, ws_root: str, physical: str, rel: str,
                 destination: str) -> None:
    """[S4]: a reference at the notes' runtime path would be shadowed; [S2]: content moved
    to (or into) the legacy notes location would become the project notes."""
    from aikito_mem.world.resources import resolve

    notes = resolve(config, ws_root, Observer())
    if notes.notes_source is not None and is_notes(rel):
        raise AdoptRefused(
            f"{physical} is at the runtime path of the project notes "
            f"({MEMORY_DIR}/{layout.NOTES}); a "
            f"reference there would be shadowed — move its contents into "
            f"{notes.notes_source} yourself, then remove it", code="notes", path=physical)
    legacy = layout.notes_sources(ws_root, config.name)[1]
    if not notes.project_memory_exists and (destination == legacy or
                                            destination.startswith(f"{legacy}/")):
        raise AdoptRefused(
            f"{destination} is (inside) the legacy location of project {config.name!r}'s "
            f"notes; adopting {physical} there would change the project notes — move it "
            "yourself", code="notes", path=destination)


def _resume(given: str, physical: str, ws: Workspace, project: str | None,
            environ: Mapping[str, str] | None) -> Adoption:
    """[E5] TARGET is absent: an adopt killed between its move and its ``agent.toml`` edit
    (or its link) left the content once, whole, at its destination in the workspace.
    When that is so — TARGET in a place adopt takes, its destination there, a real file or
    directory (an instructions file with content) — the adoption is finished as the killed
    run would have: the name listed (if it is not), TARGET linked back; nothing is moved
    (:attr:`Method.RESUME`).  Anything else: ``adopt.missing``, as before."""
    from aikito_mem.commands.adopt import segments
    from aikito_mem.config.discovery import home_directory
    from aikito_mem.config.names import reference_problem

    missing = AdoptRefused(f"nothing to adopt: {given} does not exist", code="missing",
                           path=given)
    try:
        config, label, checkout = _find_checkout(physical, ws.root, project, environ)
    except AdoptRefused:
        raise missing from None
    in_checkout = physical[len(checkout.rstrip("/")) + 1:]
    if not in_checkout or not given.endswith(f"/{in_checkout}") or not _same_dir(
            given[:len(given) - len(in_checkout) - 1], checkout):
        raise missing
    try:
        checkout_dirs(checkout, in_checkout)  # the link is made where the directories are
    except AdoptRefused:
        raise missing from None
    found = segments.Where(ws, config, label, checkout, physical, in_checkout)
    if not in_checkout.startswith(f"{MEMORY_DIR}/"):
        resumed = segments.resume(found, environ)
        if resumed is None:
            raise missing
        return resumed
    rel = in_checkout[len(MEMORY_DIR) + 1:]
    destination = memory_source(ws.root, rel)
    st = segments.content_at(destination, (stat.S_ISREG, stat.S_ISDIR))
    if st is None or reference_problem(rel) is not None:
        raise missing
    _check_notes(config, ws.root, physical, rel, destination)
    kind = EntryType.FILE if stat.S_ISREG(st.st_mode) else EntryType.DIRECTORY
    home = home_directory(environ) or ""
    known = rel in config.memory
    data = read_config(config, physical, edit=not known)
    new, after = (None, config) if known else edited_config(config, data, rel, home)
    link, conflicts = predict_link(after, ws, label, checkout, rel, kind, (), home,
                                   resumed=True)
    return Adoption(
        workspace=ws.root, project=config.name, checkout=checkout, target=physical,
        reference=rel, destination=destination, kind=kind,
        identity=(st.st_dev, st.st_ino, generation(destination)),
        config_path=config.config_path, config_bytes=data, new_config=new,
        missing_dirs=(), method=Method.RESUME, link=link, conflicts=conflicts,
        found_via=ws.found_via)


def validate(target: str, workspace: str | None = None, *, project: str | None = None,
             environ: Mapping[str, str] | None = None) -> Adoption:
    """Every check of the adoption, no write.  Raises :class:`AdoptRefused`,
    :class:`AdoptFailed` (``stale``), ``ConfigError`` or ``OSError``."""
    from aikito_mem.config.discovery import home_directory, resolve_workspace
    from aikito_mem.config.names import reference_problem

    ws = resolve_workspace(workspace, environ=environ)
    given = os.path.abspath(os.path.expanduser(target))
    physical = f"{os.path.realpath(os.path.dirname(given)).rstrip('/')}/{os.path.basename(given)}"
    if lstat_or_none(given) is None:  # [E5]: an adopt killed after its move, finished
        return _resume(given, physical, ws, project, environ)
    st, kind = _target(given)
    distinct.outside_workspace(physical, st, ws.root)  # [H2], before anything else
    config, label, checkout = _find_checkout(physical, ws.root, project, environ)
    in_checkout = physical[len(checkout.rstrip("/")) + 1:]
    if not in_checkout:  # the checkout itself, named (not reached through a symlink)
        raise AdoptRefused(f"{physical} is the checkout itself; adopt only takes {TAKES}",
                           code="outside", path=physical)
    if not given.endswith(f"/{in_checkout}") or not _same_dir(
            given[:len(given) - len(in_checkout) - 1], checkout):
        raise AdoptRefused(
            f"{given} is reached through a symlink below the checkout (it is physically "
            f"{physical}); name the real path", code="through_symlink", path=given)
    checkout_dirs(checkout, in_checkout)
    distinct.no_mount_point(physical, st, checkout)
    if not in_checkout.startswith(f"{MEMORY_DIR}/"):  # [L5] skills and instructions
        from aikito_mem.commands.adopt import segments

        return segments.validate(segments.Found(ws, config, label, checkout, physical,
                                                in_checkout, st, kind), environ)
    rel = in_checkout[len(MEMORY_DIR) + 1:]
    problem = reference_problem(rel)
    if problem is not None:
        raise AdoptRefused(
            f"{physical} cannot become a memory reference: {rel!r} {problem} ([C3]) — "
            "rename it first", code="reference_invalid", path=physical)
    destination = memory_source(ws.root, rel)
    distinct.distinct_from_destination(physical, st, destination)
    _check_notes(config, ws.root, physical, rel, destination)
    missing = missing_dirs(ws.root, f"{layout.MEMORY_ROOT}/{rel}", destination)
    home = home_directory(environ) or ""
    known = rel in config.memory
    data = read_config(config, physical, edit=not known)
    new, after = (None, config) if known else edited_config(config, data, rel, home)
    method, entries = destination_method(physical, destination, kind, st, missing)
    link, conflicts = predict_link(after, ws, label, checkout, rel, kind, tuple(missing), home)
    return Adoption(
        workspace=ws.root, project=config.name, checkout=checkout, target=physical,
        reference=rel, destination=destination, kind=kind,
        identity=(st.st_dev, st.st_ino, generation(physical)),
        config_path=config.config_path, config_bytes=data, new_config=new,
        missing_dirs=tuple(missing), method=method, link=link, conflicts=conflicts,
        entries=entries, found_via=ws.found_via)
