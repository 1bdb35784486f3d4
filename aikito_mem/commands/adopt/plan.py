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

import enum
import os
import stat
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from aikito_mem import fsutil, layout
from aikito_mem.commands.adopt import distinct, treecompare, treemove
from aikito_mem.errors import (
    EXIT_STALE,
    AdoptFailed,
    AdoptRefused,
    AikitoError,
    ConfigError,
)
from aikito_mem.layout import MEMORY_DIR, is_notes, memory_source, memory_target
from aikito_mem.model import Action, Kind, Observed, Operation, ProjectConfig, SyncResult
from aikito_mem.world.observe import Observer, generation

if TYPE_CHECKING:
    from aikito_mem.config.discovery import Workspace

SCHEMA = "aikito.adopt/1"
CONTRACT_VERSION = 2


class EntryType(enum.Enum):
    FILE = "file"
    DIRECTORY = "directory"


class Method(enum.Enum):
    """How the content gets to ``<ws>/memory/REL``."""

    RENAME = "rename"
    #: Across filesystems: copy, verify, remove the original
    #: (:mod:`aikito_mem.commands.adopt.treemove`).
    COPY = "copy"
    #: The destination already holds identical content: TARGET is removed, not moved.
    REPLACE = "replace"


class Step(enum.Enum):
    MOVE = "move"
    REGISTER = "register"
    LINK = "link"


class StepStatus(enum.Enum):
    PLANNED = "planned"
    APPLIED = "applied"
    #: register: ``REL`` already listed.
    SKIPPED = "skipped"
    NOT_APPLIED = "not_applied"
    FAILED = "failed"
    #: applied, then undone because a later step failed.
    UNDONE = "undone"


class AdoptOutcome(enum.Enum):
    ADOPTED = "adopted"
    PLANNED = "planned"
    REFUSED = "refused"
    PARTIAL = "partial"
    FAILED = "failed"
    STALE = "stale"
    BUSY = "busy"
    CONFIG_ERROR = "config_error"
    INTERRUPTED = "interrupted"


@attrs.frozen
class Adoption:
    """Everything validation found: what moves where, and the new ``agent.toml``."""

    workspace: str
    project: str
    #: Physical path of the checkout root.
    checkout: str
    #: Physical path of TARGET.
    target: str
    reference: str
    destination: str
    kind: EntryType
    #: ``(dev, ino, generation)`` of TARGET when validated (the generation tells a file
    #: deleted and re-created with a reused inode number; ``None`` where unsupported).
    identity: tuple[int, int, int | None]
    config_path: str
    #: Bytes of ``agent.toml`` the edit was computed from, and the edited bytes
    #: (``None`` when ``REL`` is already listed).
    config_bytes: bytes
    new_config: bytes | None
    #: Ancestors of the destination that do not exist yet (created, shallowest first).
    missing_dirs: tuple[str, ...]
    #: ``rename`` when TARGET and the destination are on one device, ``copy`` when not,
    #: ``replace`` when the destination already holds identical content.
    method: Method
    #: The CREATE the engine will execute to link TARGET back.
    link: Operation
    #: The other conflicts of this checkout (reported; they do not stop the adoption).
    conflicts: tuple[Operation, ...] = ()
    #: ``replace``: the inventory of TARGET found identical to the destination.
    entries: tuple[treemove.Entry, ...] = ()


@attrs.frozen
class StepResult:
    step: Step
    status: StepStatus
    detail: str | None = None


@attrs.frozen
class AdoptReport:
    """The result of ``aikito adopt`` (rendered by :mod:`aikito_mem.render.adopt`)."""

    dry_run: bool
    outcome: AdoptOutcome
    exit_code: int
    #: ``None`` when validation did not complete.
    adoption: Adoption | None
    #: The method used (or expected, in a dry run).
    method: Method | None
    #: Where the complete content is now (``None`` when TARGET does not exist).
    content_at: str | None
    steps: tuple[StepResult, ...]
    conflicts: tuple[Operation, ...] = ()
    #: The result of the engine's link-back run.
    sync: SyncResult | None = None
    error: AikitoError | None = attrs.field(default=None, eq=False)

    @classmethod
    def from_error(cls, error: AikitoError, *, dry_run: bool) -> AdoptReport:
        """The report of a command that ended by ``error`` before adopt could report."""
        return cls(dry_run=dry_run, outcome=outcome_of(error), exit_code=error.exit_code,
                   adoption=None, method=None, content_at=None,
                   steps=tuple(StepResult(s, StepStatus.NOT_APPLIED) for s in Step),
                   error=error)

    def ended_by(self, error: AikitoError) -> AdoptReport:
        """This report ended by ``error`` noticed after the work (a signal): what was done
        is kept, what was only planned is not applied."""
        steps = tuple(attrs.evolve(s, status=StepStatus.NOT_APPLIED)
                      if s.status is StepStatus.PLANNED else s for s in self.steps)
        return attrs.evolve(self, outcome=outcome_of(error), exit_code=error.exit_code,
                            steps=steps, error=error)


def outcome_of(error: AikitoError) -> AdoptOutcome:
    """The ``outcome`` word of ``error`` (``failed`` for one adopt has no word for)."""
    try:
        return AdoptOutcome(error.outcome)
    except ValueError:
        return AdoptOutcome.FAILED


# ---------------------------------------------------------------------------- validation


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _describe(st: os.stat_result | None) -> str:
    return "nothing" if st is None else fsutil.describe_mode(st.st_mode)


def _find_checkout(physical: str, ws_root: str, only: str | None,
                   environ: Mapping[str, str] | None) -> tuple[ProjectConfig, str, str]:
    """``(config, label, checkout root)`` whose active checkout holds ``physical`` under
    ``.agents/memory/`` (the one shared search: :func:`aikito_mem.world.containment.find_checkouts`;
    the root is the spelling ``physical`` was found under, e.g. through a bind mount)."""
    from aikito_mem.world.containment import find_checkouts

    search = find_checkouts(physical, ws_root, only=only, under=MEMORY_DIR, environ=environ)
    found = [(m.config, m.label, m.root) for m in search.matches]
    broken = list(search.broken)
    if len(found) == 1:
        return found[0]
    if found:
        listing = ", ".join(f"{c.name} ({p})" for c, _, p in found)
        raise AdoptRefused(
            f"{physical} is in a checkout registered for several projects: {listing} — "
            "choose one with --project NAME", code="ambiguous_project", path=physical)
    if f"/{MEMORY_DIR}/" not in physical:
        raise AdoptRefused(
            f"{physical} is not inside a checkout's {MEMORY_DIR}/ directory; adopt only takes "
            f"a file or directory at <checkout>/{MEMORY_DIR}/REL", code="outside", path=physical)
    skipped = (f" (projects with a broken agent.toml were not searched: {', '.join(broken)})"
               if broken else "")
    scope = f"project {only!r}" if only is not None else "any project"
    raise AdoptRefused(
        f"{physical} is not under {MEMORY_DIR}/ of an active checkout registered for {scope} "
        f"of workspace {ws_root}{skipped} — register the checkout first "
        "(aikito sync project NAME PATH)", code="not_registered", path=physical)


def _target(given: str) -> tuple[os.stat_result, EntryType]:
    st = _lstat(given)
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
    raise AdoptRefused(f"{given} is {_describe(st)}; expected a regular file or a directory",
                       code="file_type", path=given)


def _checkout_dirs(checkout: str, rel: str) -> None:
    """Every directory from the checkout root down to TARGET's parent is a real one."""
    path = checkout.rstrip("/")
    for part in [*MEMORY_DIR.split("/"), *rel.split("/")[:-1]]:
        path = f"{path}/{part}"
        st = _lstat(path)
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise AdoptRefused(f"{path} is {_describe(st)}; expected a real directory",
                               code="through_symlink", path=path)


def _missing_dirs(ws_root: str, rel: str, destination: str) -> list[str]:
    """The ancestors of the destination that do not exist yet; every existing one must be
    a real directory (adopt never writes through a symlink)."""
    missing: list[str] = []
    path = ws_root
    for part in [layout.MEMORY_ROOT, *rel.split("/")[:-1]]:
        path = f"{path}/{part}"
        st = _lstat(path)
        if st is None:
            missing.append(path)
        elif not stat.S_ISDIR(st.st_mode):
            raise AdoptRefused(
                f"{path} is {_describe(st)}; expected a real directory to hold "
                f"{destination} (adopt never writes through a symlink)",
                code="destination_parent", path=path)
    return missing


def _read_config(config: ProjectConfig, target: str, edit: bool) -> bytes:
    """The bytes of ``agent.toml``; an edit is never made through a symlink."""
    try:
        if edit and stat.S_ISLNK(os.lstat(config.config_path).st_mode):
            raise ConfigError(
                f"{config.config_path} is a symlink; adopt never rewrites agent.toml through "
                "a symlink — add the reference to its `memory` list by hand, then run "
                "`aikito adopt` again", code="config.memory_edit_failed",
                path=config.config_path)
        data, _ = fsutil.read_regular(config.config_path, follow=True)
    except OSError as exc:
        raise ConfigError(f"{config.config_path}: cannot read agent.toml ({exc.strerror}); "
                          "nothing was written", code="config.unreadable",
                          path=config.config_path) from None
    if fsutil.sha256_hex(data) != config.sha256:
        raise AdoptFailed(f"{config.config_path} changed while being read; nothing was "
                          "written — run again", code="stale", content_at=target,
                          exit_code=EXIT_STALE, outcome="stale")
    if edit:
        from aikito_mem.config.write import check_rewritable

        check_rewritable(config.config_path)  # its owner kept, or refused before any move
    return data


def edited_config(config: ProjectConfig, data: bytes, ref: str, home: str
                  ) -> tuple[bytes, ProjectConfig]:
    """``agent.toml`` with ``ref`` appended to ``memory``, and its parse ([C3], [C4])."""
    from aikito_mem.config.agent_toml import parse_project_config
    from aikito_mem.config.edit import add_memory_reference

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{config.config_path} is not valid UTF-8; add {ref!r} to its "
                          "memory list by hand", code="config.memory_edit_failed",
                          path=config.config_path) from None
    new = add_memory_reference(text, ref, filename=config.config_path).encode("utf-8")
    try:
        parsed = parse_project_config(new, name=config.name, project_dir=config.project_dir,
                                      config_path=config.config_path, home=home)
    except ConfigError as exc:
        raise AdoptRefused(f"cannot adopt as reference {ref!r}: with it added, {exc.message}",
                           code="reference_clash", path=config.config_path) from None
    return new, parsed


class _AfterMove(Observer):
    """Observations of the world as it will be once the content is at its destination."""

    def __init__(self, present: Mapping[str, Observed]) -> None:
        super().__init__()
        self._present = dict(present)

    def lstat(self, path: str) -> Observed:
        found = self._present.get(path)
        return found if found is not None else super().lstat(path)


def predict_link(config: ProjectConfig, ws: Workspace, label: str, checkout: str, rel: str,
                 kind: EntryType, missing: tuple[str, ...], home: str
                 ) -> tuple[Operation, tuple[Operation, ...]]:
    """The engine's plan of this checkout once TARGET has moved: TARGET's CREATE and the
    other conflicts.  :class:`AdoptRefused` when TARGET would not be linked."""
    from aikito_mem.model import CheckoutState
    from aikito_mem.planner.memory import build_plan
    from aikito_mem.world import checkouts as _checkouts
    from aikito_mem.world.resources import resolve

    destination = memory_source(ws.root, rel)
    present = {d: Observed(Kind.DIR) for d in missing}
    present[destination] = Observed(Kind.FILE if kind is EntryType.FILE else Kind.DIR)
    resources = resolve(config, ws.root, _AfterMove(present))
    view = _checkouts.observe(_checkouts.Slot(label, checkout, CheckoutState.ACTIVE),
                              Observer())
    view = attrs.evolve(view, entries=tuple(
        (r, o) for r, o in view.entries if r != rel and not r.startswith(f"{rel}/")))
    plan = build_plan(config=config, workspace=ws.root, workspace_source=ws.found_via,
                      resources=resources, checkouts=(view,), explicit_path=checkout,
                      home=home)
    target = memory_target(checkout, rel)
    own = next((op for op in plan.operations if op.target == target), None)
    others = tuple(op for op in plan.conflicts if op.target != target)
    if own is None or own.action is not Action.CREATE:
        why = ("the engine would plan nothing for it" if own is None else
               f"the engine would plan {own.action.value}: {own.reason}"
               + (f" ({own.remedy})" if own.remedy else ""))
        raise AdoptRefused(f"once moved, {target} could not be linked back — {why}; nothing "
                           "was written", code="link_refused", path=target)
    return own, others


def _destination(physical: str, destination: str, kind: EntryType, st: os.stat_result,
                 missing: list[str]) -> tuple[Method, tuple[treemove.Entry, ...]]:
    """How the content gets there; a destination that differs is refused, with how."""
    if _lstat(destination) is None:
        first = missing[0] if missing else destination
        method = Method.RENAME if os.lstat(os.path.dirname(first)).st_dev == st.st_dev \
            else Method.COPY
        if method is Method.COPY and kind is EntryType.DIRECTORY:
            try:
                treemove.inventory(physical)  # refuses FIFOs, sockets, devices first
            except treemove.SpecialFileError as exc:
                raise AdoptRefused(
                    f"{exc.filename} is {exc.what}; adopt across filesystems copies only "
                    "files, directories and symlinks — move it out of the way first",
                    code="file_type", path=str(exc.filename)) from None
        return method, ()
    try:
        entries, differences = treecompare.compare(
            physical, destination, ("in the checkout", "in the workspace"))
    except treemove.TreeChangedError:
        raise AdoptFailed(f"{physical} changed while it was compared with {destination}; "
                          "nothing was written — run adopt again when it is quiet",
                          code="source_changed", content_at=physical, exit_code=EXIT_STALE,
                          outcome="stale") from None
    if not differences:
        return Method.REPLACE, entries
    listing = "; ".join(f"{d.rel}: {d.what}" if d.rel else d.what for d in differences[:5])
    more = f" (and {len(differences) - 5} more)" if len(differences) > 5 else ""
    diff = treecompare.diff_text(physical, destination, differences, label_a=physical,
                              label_b=destination)
    raise AdoptRefused(
        f"{destination} already exists and differs from {physical}: {listing}{more} — adopt "
        f"replaces {physical} only by identical content; merge what you need into "
        f"{destination}, then remove {physical} (or run adopt again once they are "
        "identical)", code="destination_exists", path=destination,
        differences=differences, diff=diff)


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


def validate(target: str, workspace: str | None = None, *, project: str | None = None,
             environ: Mapping[str, str] | None = None) -> Adoption:
    """Every check of the adoption, no write.  Raises :class:`AdoptRefused`,
    :class:`AdoptFailed` (``stale``), ``ConfigError`` or ``OSError``."""
    from aikito_mem.config.discovery import home_directory, resolve_workspace
    from aikito_mem.config.names import reference_problem

    ws = resolve_workspace(workspace, environ=environ)
    given = os.path.abspath(os.path.expanduser(target))
    st, kind = _target(given)
    physical = f"{os.path.realpath(os.path.dirname(given)).rstrip('/')}/{os.path.basename(given)}"
    distinct.outside_workspace(physical, st, ws.root)  # [H2], before anything else
    config, label, checkout = _find_checkout(physical, ws.root, project, environ)
    rel = physical[len(f"{checkout.rstrip('/')}/{MEMORY_DIR}") + 1:]
    if not given.endswith(f"/{MEMORY_DIR}/{rel}"):
        raise AdoptRefused(
            f"{given} is reached through a symlink below the checkout (it is physically "
            f"{physical}); name the real path", code="through_symlink", path=given)
    _checkout_dirs(checkout, rel)
    distinct.no_mount_point(physical, st, checkout)
    problem = reference_problem(rel)
    if problem is not None:
        raise AdoptRefused(
            f"{physical} cannot become a memory reference: {rel!r} {problem} (SPEC [C3]) — "
            "rename it first", code="reference_invalid", path=physical)
    destination = memory_source(ws.root, rel)
    distinct.distinct_from_destination(physical, st, destination)
    _check_notes(config, ws.root, physical, rel, destination)
    missing = _missing_dirs(ws.root, rel, destination)
    home = home_directory(environ) or ""
    listed = rel in config.memory
    data = _read_config(config, physical, edit=not listed)
    new, after = (None, config) if listed else edited_config(config, data, rel, home)
    method, entries = _destination(physical, destination, kind, st, missing)
    link, conflicts = predict_link(after, ws, label, checkout, rel, kind, tuple(missing), home)
    return Adoption(
        workspace=ws.root, project=config.name, checkout=checkout, target=physical,
        reference=rel, destination=destination, kind=kind,
        identity=(st.st_dev, st.st_ino, generation(physical)),
        config_path=config.config_path, config_bytes=data, new_config=new,
        missing_dirs=tuple(missing), method=method, link=link, conflicts=conflicts,
        entries=entries)
