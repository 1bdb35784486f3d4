"""``aikito doctor``: health checks of the memory substrate, each ok / warning / error.

Doctor writes nothing: directories are checked with ``stat`` and ``os.access`` (never by
creating a file), and git is asked read-only questions (``rev-parse``, ``check-ignore``)
with ``GIT_OPTIONAL_LOCKS=0``, each within a time limit (:mod:`aikito_mem.commands.doctor.git`).
The one exception is ``--fix``: it appends the missing exclude lines to each repository's
``info/exclude`` (:func:`aikito_mem.commands.doctor.git.apply_fix`).  Unlike the sync
engine, which never reads a source, doctor reads the contents of ``MEMORY.md`` index
files: checking an index is its job.  :func:`run` returns a frozen :class:`DoctorReport`;
:mod:`aikito_mem.render.doctor` turns it into text and into the ``aikito.doctor/1``
document.

The checks (their ids are stable) and what each reports are the table of
``docs/commands.md``.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from shlex import quote
from typing import Any

from aikito_mem import layout
from aikito_mem.commands.doctor import git as doctor_git
from aikito_mem.commands.doctor.git import ENTRIES, Fix, GitCheckout, words
from aikito_mem.commands.doctor.report import Check, DoctorReport, literal
from aikito_mem.errors import (
    AikitoError,
    ConfigError,
    InterruptedError_,
)
from aikito_mem.layout import INDEX_NAME, notes_sources
from aikito_mem.model import ProjectConfig, Severity

OK, WARNING, ERROR = Severity.OK, Severity.WARNING, Severity.ERROR
#: Largest index file read (bytes); a bigger one is reported, not read.
MAX_INDEX_BYTES = 4 << 20

# [title](target) or [title](target "title"); images (![..](..)) match too.
_LINK = re.compile(
    r"(!?)\[(?:[^\[\]\\]|\\.)*\]"  # [title], escapes allowed
    r"\(\s*(<[^<>\n]*>|[^\s()]+)"  # (target or (<target>; no '<' inside: linear scan
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"  # optional "link title", then )
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


# --------------------------------------------------------------------------------- checks


def _workspace_check(ws: Any, environ: Mapping[str, str]) -> Check:
    from aikito_mem.config.discovery import expand_home, home_directory

    origin = {"option": "the --workspace option", "AIKITO_DIR": "the AIKITO_DIR variable",
              "pointer file": "the pointer file", "default": "the default ~/aikito"}
    via = origin.get(ws.found_via, ws.found_via)
    expanded = expand_home(ws.given, home_directory(environ))
    if ws.found_via == "option" and not os.path.isabs(expanded):
        return Check(
            "workspace.source", WARNING,
            f"workspace {ws.root} was found from {via} as the relative path {ws.given!r}, "
            "resolved against the current directory: run from elsewhere, the same command "
            "names another workspace",
            remedy=f"pass an absolute path (--workspace {literal(ws.root)}) or set "
            f"AIKITO_DIR={literal(ws.root)}",
            path=ws.root,
        )
    return Check(
        "workspace.source", OK,
        f"workspace {ws.root} resolved from {via} ({ws.given!r}); it does not depend on the "
        "current directory",
        path=ws.root,
    )


def _dir_check(check_id: str, path: str, what: str, *, project: str | None,
               missing: Severity, missing_command: str) -> Check:
    """Exists, is a directory (a symlink to one is followed), is writable — no write."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Check(check_id, missing, f"{what} {path} does not exist",
                     remedy="create it", commands=(missing_command,), path=path,
                     project=project)
    except OSError as exc:
        return Check(check_id, ERROR, f"{what} {path} cannot be examined: {exc.strerror}",
                     remedy="fix the permissions of its parent directories", path=path,
                     project=project)
    if not stat.S_ISDIR(st.st_mode):
        return Check(check_id, ERROR, f"{what} {path} is not a directory",
                     remedy=f"move {quote(path)} out of the way and create a directory there",
                     path=path, project=project)
    if not os.access(path, os.W_OK | os.X_OK):
        return Check(check_id, ERROR,
                     f"{what} {path} is not writable by this user: agents cannot record "
                     "memory there", remedy="fix its permissions, for example",
                     commands=(f"chmod u+rwx {quote(path)}",), path=path, project=project)
    return Check(check_id, OK, f"{what} {path} is a writable directory", path=path,
                 project=project)


def _index_files(root: str) -> Iterator[str]:
    """Every ``MEMORY.md`` below ``root`` (never through a symlinked directory), sorted."""
    found: list[str] = []
    stack = [root]  # iterative: os.walk recurses, a deep tree raised RecursionError
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:  # unreadable or vanished: skipped, as os.walk does
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif entry.name == INDEX_NAME:  # a symlink too: check_index reports it
                found.append(entry.path)
    yield from sorted(found)


def _link_targets(text: str) -> Iterator[tuple[int, str, bool]]:
    """``(line number, target, is_image)`` of every local Markdown link, code excluded."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if match is not None:
            if fence is None:
                fence = match.group(1)
            elif match.group(1) == fence:
                fence = None
            continue
        if fence is not None:
            continue
        for link in _LINK.finditer(_CODE_SPAN.sub("", line)):
            target = link.group(2)
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1].strip()
            if not target or target.startswith("#") or _SCHEME.match(target):
                continue
            yield number, target, link.group(1) == "!"


def check_index(index: str, project: str | None = None) -> list[Check]:
    """[title](path) links of one ``MEMORY.md``: dangling entries and duplicates."""
    from urllib.parse import unquote

    try:
        fd = os.open(index, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return [Check("index.links", WARNING, f"index {index} cannot be opened: "
                      f"{exc.strerror}", remedy="make it a readable regular file",
                      path=index, project=project)]
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return [Check("index.links", WARNING, f"index {index} is not a regular file; "
                          "not checked", path=index, project=project)]
        if st.st_size > MAX_INDEX_BYTES:
            return [Check("index.links", WARNING,
                          f"index {index} is {st.st_size} bytes, larger than "
                          f"{MAX_INDEX_BYTES}; not checked",
                          remedy="split it into smaller indexes", path=index,
                          project=project)]
        data = b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    base = os.path.dirname(index)
    checks: list[Check] = []
    seen: dict[str, int] = {}
    total = 0
    for number, target, image in _link_targets(text):
        total += 1
        local = unquote(target.split("#", 1)[0].split("?", 1)[0])
        if not local:
            continue
        resolved = os.path.normpath(local if local.startswith("/") else
                                    os.path.join(base, local))
        if not os.path.exists(resolved):
            checks.append(Check(
                "index.links", ERROR,
                f"{index}:{number}: entry ({target}) points to {resolved}, which does not "
                "exist", remedy=f"fix or remove that entry of {quote(index)}", path=index,
                project=project))
        if image:
            continue
        first = seen.get(resolved)
        if first is not None:
            checks.append(Check(
                "index.links", WARNING,
                f"{index}:{number}: {resolved} is listed twice (first on line {first})",
                remedy=f"remove one of the two entries of {quote(index)}", path=index,
                project=project))
        else:
            seen[resolved] = number
    if not checks:
        checks.append(Check("index.links", OK,
                            f"index {index}: {total} link{'s' * (total != 1)}, all resolve, "
                            "none listed twice", path=index, project=project))
    return checks


def check_git_ignore(checkout: str, project: str, label: str, *,
                     instruction_targets: tuple[str, ...] = (),
                     links: Mapping[str, tuple[str, ...]] | None = None,
                     ) -> tuple[Check | None, GitCheckout | None]:
    """The ``git.ignore`` check of ``checkout`` (``None`` outside git) and what git said
    about it ([L2]).  A git that is missing, cannot run or does not answer within
    :data:`aikito_mem.world.git.GIT_TIMEOUT` is a finding for this checkout, never the
    end of doctor."""
    where = f"checkout {label} ({checkout})"
    try:
        state = doctor_git.inspect(checkout, project, label,
                                   instruction_targets=instruction_targets, links=links)
    except doctor_git.GitUnavailable as exc:
        if exc.reason == "git is not installed":
            return Check("git.ignore", OK, f"{where}: git is not installed; not checked",
                         path=checkout, project=project), None
        return Check("git.ignore", WARNING, f"{where}: {exc.reason}; not checked",
                     remedy="check that git works there",
                     commands=(f"git -C {quote(checkout)} status",), path=checkout,
                     project=project), None
    if state is None:
        return None, None
    return git_check(state), state


def git_check(state: GitCheckout) -> Check:
    """The ``git.ignore`` check of one checkout git answered about."""
    where, project = state.where, state.project
    tracked = (f" ({words(state.tracked_dirs)} holds files git tracks: only aikito's "
               "links there are excluded, one by one)") if state.tracked_dirs else ""
    if not state.missing:
        return Check("git.ignore", OK, f"{where}: git ignores {words(state.asked)}"
                     f"{tracked}", path=state.checkout, project=project)
    missing = words(state.missing)
    if state.overridden:
        listed = words(state.overridden)
        return Check(
            "git.ignore", WARNING,
            f"{where}: git does not ignore {missing}, although {state.exclude} lists "
            f"{listed}: a rule of a .gitignore file re-includes it",
            remedy=f"remove the '!' rule that re-includes {listed} from the checkout's "
            ".gitignore files", path=state.exclude, project=project)
    patterns = words(state.patterns)
    return Check(
        "git.ignore", WARNING,
        f"{where}: git does not ignore {missing} — aikito's links there (absolute paths "
        f"of this machine) show up in git status and can be committed{tracked}",
        remedy=f"to add {patterns} to {quote(state.exclude)}, run",
        commands=("aikito doctor --fix", "\n".join(
            f"printf '%s\\n' {quote(p)} >> {quote(state.exclude)}" for p in state.patterns)),
        path=state.exclude, project=project)


def _notes_checks(ws_root: str, name: str) -> list[Check]:
    """The project's notes directory, when it has one.  A project without notes (nothing
    at the notes location of [S2]) is fine: an ``ok`` check, shown with ``-v``."""
    current, legacy = notes_sources(ws_root, name)
    project_memory = layout.project_memory(ws_root, name)
    pm_exists = os.path.lexists(project_memory)
    checks: list[Check] = []
    chosen = current if pm_exists else legacy
    remedy = f"mkdir -p {quote(current)}"
    if not os.path.lexists(chosen):
        legacy_too = "" if pm_exists else f" (nor at the legacy {legacy})"
        checks.append(Check("notes.dir", OK,
                            f"project {name} has no notes at {current}{legacy_too}; to give "
                            f"it some: {remedy}", path=current, project=name))
    else:
        checks.append(_dir_check("notes.dir", chosen, f"project {name} notes directory",
                                 project=name, missing=WARNING, missing_command=remedy))
    if pm_exists and os.path.lexists(legacy):
        checks.append(Check(
            "notes.legacy", WARNING,
            f"project {name} has legacy notes at {legacy} next to {project_memory}: they are "
            f"ignored, only {current} is linked",
            remedy=f"move what you need from {quote(legacy)} into {quote(current)}, then "
            f"remove {quote(legacy)}",
            path=legacy, project=name))
    elif not pm_exists and os.path.lexists(legacy):
        checks.append(Check(
            "notes.legacy", OK,
            f"project {name} keeps its notes at the legacy location {legacy} (still "
            "supported)", remedy="to migrate",
            commands=(f"mkdir -p {quote(os.path.dirname(current))} && "
                      f"mv {quote(legacy)} {quote(current)}",), path=legacy, project=name))
    return checks


# ---------------------------------------------------------------------------------- run

#: One checkout's ``git.ignore`` check and what git said about it (``None``: no answer).
GitEntry = tuple[Check, GitCheckout | None]


def _project_checks(config: Any, ws: Any, observer: Any, indexes: dict[str, str | None],
                    home: str, environ: Mapping[str, str] | None = None,
                    ) -> tuple[list[Check], list[GitEntry]]:
    """The checks of one loaded project, and its git checks (listed last).  A listed
    checkout in a place [H1] refuses is an error: every sync of the project is blocked."""
    from aikito_mem.model import CheckoutState
    from aikito_mem.world import checkouts as _checkouts

    name = config.name
    ws_root = ws.root
    checks: list[Check] = []
    git_checks: list[GitEntry] = []
    try:
        slots = _checkouts.slots(config, observer, home=home)
    except (OSError, ValueError) as exc:  # a path the system refuses (NUL byte, …)
        slots = ()
        checks.append(Check("project.config", ERROR,
                            f"{name}: the checkout paths of {config.config_path} cannot be "
                            f"examined: {exc}",
                            remedy=f"fix the paths in {quote(config.config_path)}",
                            path=config.config_path, project=name))
    warnings = [f for f in config.findings if f.severity == WARNING]
    for f in warnings:
        checks.append(Check("project.config", WARNING, f"{name}: {f.message}",
                            path=f.path or config.config_path, project=name))
    if not warnings and not checks:
        checks.append(Check("project.config", OK, f"{config.config_path} is valid",
                            path=config.config_path, project=name))
    checks.extend(_notes_checks(ws_root, name))
    current = notes_sources(ws_root, name)[0]
    if os.path.isdir(current) and not os.path.islink(current):
        for index in _index_files(current):
            indexes.setdefault(index, name)
    for slot in slots:
        if slot.code is not None:
            checks.append(Check("checkout.refused", ERROR, f"{name}: {slot.reason}",
                                remedy=f"remove {literal(slot.path)} (checkout {slot.label}) from "
                                f"{quote(config.config_path)}",
                                path=slot.path, project=name))
    active = [slot for slot in slots if slot.state is CheckoutState.ACTIVE]
    runtime = _runtime_paths(config, ws, environ) if active else {}
    for slot in active:
        targets, links = runtime.get(slot.path, ((), {}))
        found, state = check_git_ignore(slot.path, name, slot.label,
                                        instruction_targets=targets, links=links)
        if found is not None:
            git_checks.append((found, state))
    return checks, git_checks


#: Per checkout: its instruction targets and, per runtime directory, aikito's links.
RuntimePaths = dict[str, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]]


def _runtime_paths(config: Any, ws: Any, environ: Mapping[str, str] | None) -> RuntimePaths:
    """What aikito links in each active checkout of the project, from the plan a dry run
    shows ([L2]): the instruction targets it links (CREATE or NOOP: never one holding
    the user's own file, nor one git tracks), and its links under each runtime
    directory.  A project that cannot be planned has none (its directories are still
    checked)."""
    from aikito_mem.api import Project
    from aikito_mem.model import Action, SegmentName

    project = Project(config=config, workspace=ws)
    project._environ = environ
    try:
        plan = project.plan(register=False, identify=False)
    except InterruptedError_:
        raise
    except AikitoError:
        return {}
    found: dict[str, tuple[list[str], dict[str, list[str]]]] = {}
    for op in plan.operations:
        if op.action not in (Action.CREATE, Action.NOOP):
            continue
        rel = op.target[len(op.checkout) + 1:]
        targets, links = found.setdefault(op.checkout, ([], {}))
        if op.segment is SegmentName.INSTRUCTIONS:
            targets.append(rel)
            continue
        entry = next((e for e in ENTRIES if rel.startswith(e)), None)
        if entry is not None:
            links.setdefault(entry, []).append(rel)
        elif op.segment is SegmentName.SKILLS:
            # [N1]: a link in an agent's own skills directory (which may hold the
            # agent's own, tracked skills) is excluded on its own, like a target.
            targets.append(rel)
    return {co: (tuple(t), {e: tuple(v) for e, v in ls.items()})
            for co, (t, ls) in found.items()}


def _fix(git_checks: list[GitEntry], *, dry_run: bool
         ) -> tuple[list[GitEntry], tuple[Fix, ...]]:
    """``--fix``: the exclude lines each repository misses, appended (or only planned);
    the checkouts whose exclude file was written are asked again."""
    fixes = doctor_git.plan_fixes(state for _, state in git_checks if state is not None)
    if dry_run or not fixes:
        return git_checks, fixes
    fixes = tuple(doctor_git.apply_fix(f) for f in fixes)
    written = {f.path for f in fixes if f.status == "applied"}
    again: list[GitEntry] = []
    for check, state in git_checks:
        if state is not None and state.exclude in written:
            found, state = check_git_ignore(
                state.checkout, state.project, state.label,
                instruction_targets=tuple(a for a in state.asked if not a.endswith("/")
                                          and not a.startswith(ENTRIES)),
                links={e: tuple(a for a in state.asked if a.startswith(e) and a != e)
                       for e in ENTRIES})
            if found is not None:
                again.append((found, state))
            continue
        again.append((check, state))
    return again, fixes


def _configs(root: str, names: Iterable[str], environ: Mapping[str, str] | None,
             checks: list[Check]) -> list[ProjectConfig]:
    """Every project's configuration that loads; a ``project.config`` error in ``checks``
    for each one that does not."""
    from aikito_mem.config.projects import load_project_config

    configs = []
    for name in names:
        try:
            configs.append(load_project_config(root, name, environ=environ))
        except InterruptedError_:
            raise
        except AikitoError as exc:
            from aikito_mem.commands.doctor.segments import unloadable_config_checks

            checks.extend(unloadable_config_checks(root, name, exc))
    return configs


def _across_projects(configs: list[ProjectConfig], root: str, observer: Any) -> list[Check]:
    """The checks across segments and projects ([G5]): the agent registry, conflict
    markers in what agents read, one checkout registered by two projects."""
    from aikito_mem.commands.doctor.segments import (
        conflict_marker_checks,
        registry_check,
        shared_checkout_checks,
    )

    registry = registry_check(root)
    checks = [registry] if registry is not None else []
    checks.extend(conflict_marker_checks(configs, root))
    checks.extend(shared_checkout_checks(configs, observer))
    return checks


def run(workspace: str | None, *, strict: bool = False, fix: bool = False,
        dry_run: bool = False, environ: Mapping[str, str] | None = None) -> DoctorReport:
    """Every check of the workspace (``None``: discovery).  Writes nothing — except, with
    ``fix`` and without ``dry_run``, the exclude lines of :mod:`aikito_mem.commands.doctor.git`;
    the checks then describe the fixed state."""
    from aikito_mem.config.discovery import home_directory, resolve_workspace
    from aikito_mem.config.projects import list_projects
    from aikito_mem.world.observe import Observer

    env = os.environ if environ is None else environ
    try:
        ws = resolve_workspace(workspace, environ=environ)
        names = list_projects(ws.root)
    except ConfigError as exc:
        return DoctorReport(None, None, strict,
                            (Check("workspace.source", ERROR, exc.message, path=exc.path),),
                            error=exc, fix=fix, dry_run=dry_run)
    checks: list[Check] = [_workspace_check(ws, env)]
    memory_root = layout.memory_root(ws.root)
    configs = _configs(ws.root, names, environ, checks)
    uses_memory = any(c.memory for c in configs)
    checks.append(_dir_check(
        "memory.root", memory_root, "workspace memory root", project=None,
        missing=ERROR if uses_memory else WARNING,
        missing_command=f"mkdir {quote(memory_root)}"))

    indexes: dict[str, str | None] = {}
    if os.path.isdir(memory_root) and not os.path.islink(memory_root):
        for index in _index_files(memory_root):
            indexes[index] = None
    observer = Observer()
    git_checks: list[GitEntry] = []
    home = home_directory(environ) or ""
    for config in configs:
        own, git = _project_checks(config, ws, observer, indexes, home, environ)
        checks.extend(own)
        git_checks.extend(git)
    for index, project in sorted(indexes.items()):
        checks.extend(check_index(index, project))
    checks.extend(_across_projects(configs, ws.root, observer))
    fixes: tuple[Fix, ...] = ()
    if fix:
        git_checks, fixes = _fix(git_checks, dry_run=dry_run)
    checks.extend(check for check, _ in git_checks)
    return DoctorReport(ws.root, ws.found_via, strict, tuple(checks), fix=fix,
                        dry_run=dry_run, fixes=fixes)
