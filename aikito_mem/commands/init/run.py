"""``aikito init``: create a workspace (:func:`init_workspace`), or a project in one
(:func:`init_project`) — planning from observations first, then writing exactly the plan,
never replacing anything (``mkdir``, no-replace renames, ``O_NOFOLLOW`` descriptors);
``agents/`` holds a file per catalogue agent detected here ([N2]).
A dry run stops after planning.  docs/design.md ("init") and docs/commands.md give the
rules; the results are frozen :class:`InitReport` values.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from aikito_mem import fsutil, signals
from aikito_mem.commands.init.paths import (
    check_path_text,
    checkout_registration,
    pointer_plan,
    split_existing,
    workspace_target,
)
from aikito_mem.commands.init.repoint import write_step
from aikito_mem.commands.init.report import EntryKind, InitEntry, InitReport, InitStatus
from aikito_mem.config.discovery import Workspace, home_directory, resolve_workspace
from aikito_mem.errors import ConfigError, ExecutionError, InterruptedError_, StalePlanError
from aikito_mem.layout import (
    AGENTS_ROOT,
    MEMORY_DIR,
    MEMORY_ROOT,
    PROJECTS_ROOT,
    SKILLS_DIR,
    SKILLS_ROOT,
    projects_root,
)
from aikito_mem.model import Finding

__all__ = [
    "LAYOUT_TEXT",
    "WORKSPACE_DIRS",
    "EntryKind",
    "InitEntry",
    "InitReport",
    "InitStatus",
    "init_project",
    "init_workspace",
    "project_config_text",
]

#: The directories of a workspace, in the order they are reported.
WORKSPACE_DIRS = (PROJECTS_ROOT, MEMORY_ROOT, SKILLS_ROOT, AGENTS_ROOT, "subagents")
LAYOUT_FILE = "layout.toml"
#: The reference tool's layout marker, byte for byte.
LAYOUT_TEXT = b"version = 2\n"
#: Files of the reference tool's older layout: its migration writes ``layout.toml`` itself.
_LEGACY_FILES = ("agents.toml", "subagents.toml")
_MARKERS = frozenset((*WORKSPACE_DIRS, LAYOUT_FILE, *_LEGACY_FILES))
#: Project names both tools accept (the reference tool's rule).
_PROJECT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
_SMALL = 64 * 1024


@attrs.frozen
class _Step:
    """One planned path: ``anchor`` (an existing physical directory) + ``parts``."""

    anchor: str
    parts: tuple[str, ...]
    kind: EntryKind
    role: str
    exists: bool = False
    data: bytes = b""
    mode: int = 0o777

    @property
    def path(self) -> str:
        return os.path.join(self.anchor, *self.parts)


# --------------------------------------------------------------------------- observing


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ConfigError(
            f"{path} cannot be examined ({exc.strerror}); expected to be able to look at "
            "it — fix its permissions and run aikito init again",
            code="config.init_unreadable", path=path,
        ) from None


def _wrong_type(path: str, expected: str, st: os.stat_result) -> ConfigError:
    found = fsutil.describe_mode(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        try:
            found += f" to {fsutil.describe_mode(os.stat(path).st_mode)}"
        except OSError:
            found = "a dangling symlink"
    return ConfigError(
        f"{path} is {found}; expected {expected} — aikito init never replaces anything: "
        "move it away, then run aikito init again",
        code="config.init_wrong_type", path=path,
    )


def _observe(
    path: str, kind: EntryKind, findings: list[Finding], *, symlink_ok: bool = True
) -> bool:
    """Whether the entry exists (of the right kind); a wrong kind is a ``ConfigError``.

    With ``symlink_ok``, a symlink to the right kind counts as existing, with a warning:
    it is left as it is and nothing is written through it.
    """
    st = _lstat(path)
    if st is None:
        return False
    want = stat.S_ISDIR if kind is EntryKind.DIRECTORY else stat.S_ISREG
    expected = "a directory" if kind is EntryKind.DIRECTORY else "a regular file"
    if want(st.st_mode):
        return True
    if symlink_ok and stat.S_ISLNK(st.st_mode):
        try:
            target = os.stat(path)
        except OSError:
            target = None
        if target is not None and want(target.st_mode):
            findings.append(Finding(
                "init.symlink", "warning",
                f"{path} is a symlink to {expected[2:]}; left as it is (aikito init never "
                "writes through a symlink; the reference tool 1.61.1 refuses a symlinked "
                "agents/, subagents/ or layout.toml)", path,
            ))
            return True
    raise _wrong_type(path, expected, st)


def _check_writable(anchor: str, steps: Iterable[_Step]) -> None:
    """Refuse before writing when an anchor that receives a new entry cannot be written."""
    receives = any(not s.exists and s.anchor == anchor and len(s.parts) == 1 for s in steps)
    if receives and not os.access(anchor, os.W_OK | os.X_OK, effective_ids=True):
        raise ConfigError(
            f"cannot create entries in {anchor}: no permission to write there "
            "(or a read-only file system); expected a writable directory — fix its "
            "permissions or choose another path; nothing was written",
            code="config.init_not_writable", path=anchor,
        )


def _check_layout(path: str, findings: list[Finding]) -> None:
    """Warn when an existing ``layout.toml`` is not the reference tool's ``version = 2``."""
    import tomllib

    try:
        data, _ = fsutil.read_regular(path, follow=True, limit=_SMALL)
        doc: object = tomllib.loads(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        doc = None
    if doc != {"version": 2}:
        findings.append(Finding(
            "init.layout", "warning",
            f"{path} exists but does not hold exactly 'version = 2'; left as it is (the "
            "reference tool 1.61.1 accepts only that layout)", path,
        ))


# --------------------------------------------------------------------------- writing


class _Writer:
    """Opens each directory once: the anchor, then ``O_NOFOLLOW`` components below it."""

    def __init__(self) -> None:
        self._fds: dict[tuple[str, tuple[str, ...]], int] = {}

    def parent_fd(self, step: _Step) -> int:
        key: tuple[str, tuple[str, ...]] = (step.anchor, ())
        if key not in self._fds:
            # A physical path: no component is a symlink, the last one must not become one.
            self._fds[key] = fsutil.open_subdir(None, step.anchor)
        fd = self._fds[key]
        for i, name in enumerate(step.parts[:-1]):
            sub = (step.anchor, step.parts[: i + 1])
            if sub not in self._fds:
                self._fds[sub] = fsutil.open_subdir(fd, name)
            fd = self._fds[sub]
        return fd

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def _entries(steps: list[_Step], created: set[str], dry_run: bool) -> tuple[InitEntry, ...]:
    out = []
    for s in steps:
        if s.exists:
            status = InitStatus.EXISTED
        elif s.path in created and not dry_run:
            status = InitStatus.CREATED
        else:
            status = InitStatus.PLANNED
        out.append(InitEntry(s.path, s.kind, status, s.role))
    return tuple(out)


def _run(steps: list[_Step], make_report: Any, dry_run: bool) -> InitReport:
    """Write every missing step in order (parents first); a dry run writes nothing."""
    created: set[str] = set()
    if dry_run:
        return make_report(_entries(steps, created, True))  # type: ignore[no-any-return]
    writer = _Writer()
    try:
        for step in steps:
            if step.exists:
                continue
            signals.check()
            try:
                write_step(writer.parent_fd(step), step)
            except FileExistsError:
                raise StalePlanError(
                    f"{step.path} appeared while aikito init was running; it was not "
                    "touched — run aikito init again (it adds only what is missing)",
                    differences=(f"{step.path} appeared since planning",),
                    result=make_report(_entries(steps, created, False)),
                ) from None
            except OSError as exc:
                reason = exc.strerror or type(exc).__name__
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a parent was swapped
                    reason = "a directory on the way was replaced by a symlink or a file"
                raise ExecutionError(
                    f"cannot create {step.path}: {reason}; expected to create a new "
                    f"{step.kind.value} there — fix the cause and run aikito init again "
                    "(it adds only what is missing; nothing existing was changed)",
                    result=make_report(_entries(steps, created, False)), path=step.path,
                ) from None
            created.add(step.path)
    except InterruptedError_ as exc:
        exc.result = make_report(_entries(steps, created, False))
        raise
    finally:
        writer.close()
    return make_report(_entries(steps, created, False))  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- workspace


def _check_looks_like_workspace(root: str) -> None:
    try:
        names = os.listdir(root)
    except OSError as exc:
        raise ConfigError(
            f"workspace {root} cannot be listed ({exc.strerror}); expected a readable "
            "directory — fix its permissions or choose another path",
            code="config.init_unreadable", path=root,
        ) from None
    visible = sorted(n for n in names if not n.startswith("."))
    if visible and not _MARKERS.intersection(names):
        shown = ", ".join(visible[:3]) + (", …" if len(visible) > 3 else "")
        raise ConfigError(
            f"{root} is not empty ({shown}) and does not look like a workspace (none of "
            "projects/, memory/, skills/, agents/, layout.toml); expected a new or empty "
            "directory or an existing workspace — choose another path; nothing was written",
            code="config.init_not_workspace", path=root,
        )


def _agent_steps(anchor: str, parts: tuple[str, ...], env: Mapping[str, str],
                 home: str | None, names: list[str]) -> list[_Step]:
    """``agents/`` and a file per catalogue agent detected here, or nothing ([N2], [G3])."""
    from aikito_mem.config.catalogue import detected_entries, registry_text

    found = detected_entries(env, home)
    names += [e.name for e in found]
    return [_Step(anchor, parts, EntryKind.DIRECTORY, "agents")] + [
        _Step(anchor, (*parts, f"{e.name}.toml"), EntryKind.FILE, "agent",
              data=registry_text(e).encode("utf-8")) for e in found] if found else []


def _layout_steps(root: str, ws_anchor: str, base: tuple[str, ...], new: bool,
                  findings: list[Finding]) -> list[_Step]:
    """The layout marker, unless the reference tool's older layout files are there (then
    a finding: its own migration writes the marker)."""
    legacy = [n for n in _LEGACY_FILES if not new and _lstat(f"{root}/{n}")]
    if legacy:
        findings.append(Finding(
            "init.legacy_layout", "warning",
            f"{root} has the reference tool's older {' and '.join(legacy)}; "
            f"{LAYOUT_FILE} was not created (the reference tool's "
            "'aikito migrate workspace-resources' writes it when it migrates them)",
            root,
        ))
        return []
    marker = f"{root}/{LAYOUT_FILE}"
    exists = not new and _observe(marker, EntryKind.FILE, findings)
    if exists:
        _check_layout(marker, findings)
    return [_Step(ws_anchor, (*base, LAYOUT_FILE), EntryKind.FILE, "layout", exists=exists,
                  data=LAYOUT_TEXT)]


def init_workspace(
    path: str | None = None,
    *,
    dry_run: bool = False,
    environ: Mapping[str, str] | None = None,
) -> InitReport:
    """Create (or complete) a workspace at ``path`` and write the pointer file if absent.

    ``path=None`` means where discovery would look: ``AIKITO_DIR``, else ``~/aikito``.
    Existing entries are reported as :attr:`InitStatus.EXISTED` and left untouched.
    """
    env = os.environ if environ is None else environ
    home = home_directory(env)
    findings: list[Finding] = []
    with signals.interruptible():
        found_via, target = workspace_target(path, env, home)
        anchor, missing = split_existing(target)
        root = os.path.join(anchor, *missing)
        steps: list[_Step] = [
            _Step(anchor, missing[: i + 1], EntryKind.DIRECTORY,
                  "workspace" if i == len(missing) - 1 else "parent")
            for i in range(len(missing))
        ]
        if missing:
            ws_anchor, base = anchor, missing
        else:
            ws_anchor, base = root, ()
            steps.append(_Step(ws_anchor, (), EntryKind.DIRECTORY, "workspace", exists=True))
            _check_looks_like_workspace(root)
        agents: list[str] | None = None  # the catalogue agents registered: agents/ is new
        for name in WORKSPACE_DIRS:
            exists = not missing and _observe(f"{root}/{name}", EntryKind.DIRECTORY, findings)
            if name == "agents" and not exists:  # only the agents detected here ([N2])
                steps += _agent_steps(ws_anchor, (*base, name), env, home, agents := [])
                continue
            steps.append(_Step(ws_anchor, (*base, name), EntryKind.DIRECTORY, name,
                               exists=exists))
        steps += _layout_steps(root, ws_anchor, base, bool(missing), findings)
        pointer, pointer_steps = pointer_plan(root, env, home, findings)
        steps += [
            _Step(a, parts, EntryKind.DIRECTORY if role == "config_dir" else EntryKind.FILE,
                  role, exists=exists, data=data, mode=0o700)
            for a, parts, role, exists, data in pointer_steps
        ]
        for a in {s.anchor for s in steps if s.role != "config_dir"}:
            _check_writable(a, [s for s in steps if s.role not in ("config_dir", "pointer")])

    def report(entries: tuple[InitEntry, ...]) -> InitReport:
        return InitReport("workspace", root, found_via, dry_run, entries, tuple(findings),
                          pointer=pointer, agents=None if agents is None else tuple(agents))

    return _run(steps, report, dry_run)


# --------------------------------------------------------------------------- project


def _checked_checkout(text: bytes, name: str, project_dir: str, home: str | None) -> str:
    """Read the new ``agent.toml`` as a sync will, and classify its checkout the same way:
    one [H1] refuses (``/``, home or an ancestor of it, the workspace, inside it or around
    it) is a ``ConfigError`` (``config.checkout_refused`` / ``config.checkout_in_workspace``).
    Returns its physical path."""
    from aikito_mem.config.agent_toml import parse_project_config
    from aikito_mem.world.checkouts import slots
    from aikito_mem.world.observe import Observer

    config = parse_project_config(text, name=name, project_dir=project_dir,
                                  config_path=f"{project_dir}/agent.toml", home=home or "")
    (slot,) = slots(config, Observer(), strict=True, home=home or "")
    return slot.path


def project_config_text(name: str, paths: tuple[str, ...]) -> str:
    """The commented ``agent.toml`` template of a new project ([C2], [C5])."""
    from aikito_mem.config.catalogue import toml_list

    return (
        f"# Project {name!s} of this aikito workspace (created by `aikito init project`).\n"
        "#\n"
        "# paths: where this project's checkouts (working copies) are, on any of your\n"
        "# machines; `~` is the home directory.  A path that does not exist on a machine\n"
        f"# is skipped there (offline).  `aikito sync project {name} PATH` adds one.\n"
        f"paths = {toml_list(paths)}\n"
        "\n"
        "# memory: files and directories of the workspace memory/ directory to link into\n"
        f'# each checkout\'s {MEMORY_DIR}/, e.g. ["team/conventions.md", "glossary"].\n'
        "memory = []\n"
        "\n"
        "# skills: directories of the workspace skills/ directory to link into each\n"
        f"# checkout's {SKILLS_DIR}/, e.g. [\"review\"].\n"
        "# skills = []\n"
    )


def _check_project_name(name: str) -> None:
    if _PROJECT_NAME.fullmatch(name) is None:
        raise ConfigError(
            f"project name {name!r} is not valid: expected letters, digits, '.', '_' or "
            "'-', starting with a letter or digit (at most 255), the names both aikito_mem "
            "and the reference tool accept — e.g. 'demo' or 'my-app'",
            code="config.project_name",
        )


def _projects_dir(root: str) -> str:
    """``<ws>/projects``, which must be a real directory (never written through)."""
    projects = projects_root(root)
    check_path_text(projects, "the workspace path")
    st = _lstat(projects)
    if st is None:
        raise ConfigError(
            f"{projects} does not exist (any more); expected the workspace's projects "
            "directory — run aikito init to create it",
            code="config.workspace_no_projects", path=projects,
        )
    if not stat.S_ISDIR(st.st_mode):
        raise _wrong_type(projects, "a directory (aikito init project writes only "
                          "through real directories)", st)
    return projects


def init_project(
    workspace: str | Workspace | None,
    name: str,
    checkout: str | None = None,
    *,
    dry_run: bool = False,
    environ: Mapping[str, str] | None = None,
) -> InitReport:
    """Create ``projects/NAME/agent.toml`` in the workspace, registering ``checkout``.

    ``workspace`` is a path (resolved like ``--workspace``), a resolved
    :class:`~aikito_mem.config.discovery.Workspace`, or ``None`` for discovery ([W1], [W2]).  A
    project that already has an ``agent.toml`` is a ``ConfigError`` (exit 4) and nothing
    is written.  ``checkout`` must be an existing directory ([K4]); it is registered as
    ``~/…`` when under the home directory, else as an absolute path.
    """
    env = os.environ if environ is None else environ
    home = home_directory(env)
    with signals.interruptible():
        ws = workspace if isinstance(workspace, Workspace) else resolve_workspace(
            workspace, environ=env)
        _check_project_name(name)
        registered: tuple[str, ...] = ()
        given: str | None = None
        if checkout is not None:
            given, spelled = checkout_registration(checkout, home)
            registered = (spelled,)
        anchor = projects = _projects_dir(ws.root)
        project_dir = f"{projects}/{name}"
        dir_exists = _observe(project_dir, EntryKind.DIRECTORY, [], symlink_ok=False)
        config = f"{project_dir}/agent.toml"
        if dir_exists and _lstat(config) is not None:
            raise ConfigError(
                f"project {name!r} already exists: {config} is there; nothing was written "
                "— edit that file to change the project, or choose another name",
                code="config.project_exists", path=config,
            )
        text = project_config_text(name, registered).encode("utf-8")
        physical = _checked_checkout(text, name, project_dir, home) if given else None
        steps = [
            _Step(anchor, (name,), EntryKind.DIRECTORY, "project", exists=dir_exists),
            _Step(anchor, (name, "agent.toml"), EntryKind.FILE, "project_config", data=text),
        ]
        _check_writable(anchor, steps)
        if dir_exists and not os.access(project_dir, os.W_OK | os.X_OK, effective_ids=True):
            raise ConfigError(
                f"cannot create {config}: no permission to write in {project_dir}; "
                "expected a writable directory — fix its permissions; nothing was written",
                code="config.init_not_writable", path=project_dir,
            )

    def report(entries: tuple[InitEntry, ...]) -> InitReport:
        return InitReport("project", ws.root, ws.found_via, dry_run, entries, (), name,
                          physical, registered[0] if registered else None)

    return _run(steps, report, dry_run)
