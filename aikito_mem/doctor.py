"""``aikito doctor``: health checks of the memory substrate, each ok / warning / error.

Doctor writes nothing: directories are checked with ``stat`` and ``os.access`` (never by
creating a file), and git is asked read-only questions (``rev-parse``, ``check-ignore``)
with ``GIT_OPTIONAL_LOCKS=0``.  Unlike the sync engine, which never reads a source, doctor
reads the contents of ``MEMORY.md`` index files: checking an index is its job.

Checks (ids are stable; see docs/commands.md):

- ``workspace.source`` — which source resolved the workspace and that it does not depend on
  the current directory;
- ``memory.root`` — ``<ws>/memory`` exists, is a directory, is writable;
- ``project.config`` — each ``agent.toml`` loads (its warnings are reported too);
- ``notes.dir`` — each project's notes directory exists, is a directory, is writable;
- ``notes.legacy`` — legacy notes next to current ones (a migration hint);
- ``index.links`` — every Markdown link of each ``MEMORY.md`` resolves, none is listed twice;
- ``git.ignore`` — git ignores ``.agents/memory`` in each active checkout that is a work tree.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from aikito_mem.errors import EXIT_CONFIG, EXIT_CONFLICT, EXIT_OK, AikitoError, ConfigError

SCHEMA = "aikito.doctor/1"
CONTRACT_VERSION = 1
OK, WARNING, ERROR = "ok", "warning", "error"
INDEX_NAME = "MEMORY.md"
#: The line doctor asks users to add to ``.git/info/exclude``.
EXCLUDE_LINE = ".agents/memory/"
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


@attrs.frozen
class Check:
    """One finding of doctor."""

    id: str
    status: str
    message: str
    remedy: str | None = None
    path: str | None = None
    project: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "message": self.message,
                "remedy": self.remedy, "path": self.path, "project": self.project}


# --------------------------------------------------------------------------------- checks


def _workspace_check(ws: Any, environ: Mapping[str, str]) -> Check:
    from aikito_mem.discovery import expand_home, home_directory

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
            remedy=f"pass an absolute path (--workspace {ws.root}) or set AIKITO_DIR={ws.root}",
            path=ws.root,
        )
    return Check(
        "workspace.source", OK,
        f"workspace {ws.root} resolved from {via} ({ws.given!r}); it does not depend on the "
        "current directory",
        path=ws.root,
    )


def _dir_check(check_id: str, path: str, what: str, *, project: str | None,
               missing: str, missing_remedy: str) -> Check:
    """Exists, is a directory (a symlink to one is followed), is writable — no write."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Check(check_id, missing, f"{what} {path} does not exist",
                     remedy=missing_remedy, path=path, project=project)
    except OSError as exc:
        return Check(check_id, ERROR, f"{what} {path} cannot be examined: {exc.strerror}",
                     remedy="fix the permissions of its parent directories", path=path,
                     project=project)
    if not stat.S_ISDIR(st.st_mode):
        return Check(check_id, ERROR, f"{what} {path} is not a directory",
                     remedy=f"move {path} out of the way and create a directory there",
                     path=path, project=project)
    if not os.access(path, os.W_OK | os.X_OK):
        return Check(check_id, ERROR,
                     f"{what} {path} is not writable by this user: agents cannot record "
                     "memory there", remedy=f"fix its permissions (e.g. chmod u+rwx {path})",
                     path=path, project=project)
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
                "exist", remedy=f"fix or remove that entry of {index}", path=index,
                project=project))
        if image:
            continue
        first = seen.get(resolved)
        if first is not None:
            checks.append(Check(
                "index.links", WARNING,
                f"{index}:{number}: {resolved} is listed twice (first on line {first})",
                remedy=f"remove one of the two entries of {index}", path=index,
                project=project))
        else:
            seen[resolved] = number
    if not checks:
        checks.append(Check("index.links", OK,
                            f"index {index}: {total} link{'s' * (total != 1)}, all resolve, "
                            "none listed twice", path=index, project=project))
    return checks


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    # Reading the index runs a configured fsmonitor hook (any command): never ask for it.
    # Paths git prints are bytes: decode them as the os module does.
    return subprocess.run(["git", "-c", "core.fsmonitor=false", "-C", cwd, *args],
                          capture_output=True, text=True, errors="surrogateescape",
                          env=env, timeout=30, check=False)


def check_git_ignore(checkout: str, project: str, label: str) -> Check | None:
    """Whether git ignores ``.agents/memory`` in ``checkout``; ``None`` outside git."""
    try:
        inside = _git(["rev-parse", "--is-inside-work-tree"], checkout)
    except FileNotFoundError:
        return Check("git.ignore", OK, f"checkout {label} ({checkout}): git is not installed; "
                     "not checked", path=checkout, project=project)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("git.ignore", WARNING, f"checkout {label} ({checkout}): git could not be "
                     f"run ({exc})", path=checkout, project=project)
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return None
    # The trailing slash lets a directory pattern match before .agents/memory exists.
    ignored = _git(["check-ignore", "-q", f"{EXCLUDE_LINE}"], checkout)
    if ignored.returncode == 0:
        return Check("git.ignore", OK, f"checkout {label} ({checkout}): git ignores "
                     ".agents/memory", path=checkout, project=project)
    if ignored.returncode != 1:
        why = ignored.stderr.strip() or f"exit {ignored.returncode}"
        return Check("git.ignore", WARNING, f"checkout {label} ({checkout}): git check-ignore "
                     f"failed ({why})", path=checkout, project=project)
    where = _git(["rev-parse", "--git-path", "info/exclude"], checkout)
    exclude = where.stdout.strip() if where.returncode == 0 and where.stdout.strip() else \
        ".git/info/exclude"
    exclude = os.path.normpath(os.path.join(checkout, exclude))
    return Check(
        "git.ignore", WARNING,
        f"checkout {label} ({checkout}): git does not ignore .agents/memory — its links "
        "(absolute paths of this machine) show up in git status and can be committed",
        remedy=f"add the line {EXCLUDE_LINE} to {exclude}: "
        f"echo '{EXCLUDE_LINE}' >> '{exclude}'",
        path=exclude, project=project,
    )


def _notes_checks(ws_root: str, name: str) -> list[Check]:
    from aikito_mem.resources import notes_sources

    current, legacy = notes_sources(ws_root, name)
    project_memory = f"{ws_root}/projects/{name}/memory"
    pm_exists = os.path.lexists(project_memory)
    checks: list[Check] = []
    chosen = current if pm_exists else legacy
    remedy = f"mkdir -p {current}"
    if not pm_exists and not os.path.lexists(legacy):
        checks.append(Check("notes.dir", WARNING,
                            f"project {name} has no notes directory (neither {current} nor "
                            f"the legacy {legacy}): agents have nowhere to keep its notes",
                            remedy=remedy, path=current, project=name))
    else:
        checks.append(_dir_check("notes.dir", chosen, f"project {name} notes directory",
                                 project=name, missing=WARNING, missing_remedy=remedy))
    if pm_exists and os.path.lexists(legacy):
        checks.append(Check(
            "notes.legacy", WARNING,
            f"project {name} has legacy notes at {legacy} next to {project_memory}: they are "
            f"ignored, only {current} is linked",
            remedy=f"move what you need from {legacy} into {current}, then remove {legacy}",
            path=legacy, project=name))
    elif not pm_exists and os.path.lexists(legacy):
        checks.append(Check(
            "notes.legacy", OK,
            f"project {name} keeps its notes at the legacy location {legacy} (still "
            "supported)", remedy=f"to migrate: mkdir -p {os.path.dirname(current)} && "
            f"mv {legacy} {current}", path=legacy, project=name))
    return checks


# ---------------------------------------------------------------------------------- run


def run(workspace: str | None, *, strict: bool = False,
        environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every check; the whole ``aikito.doctor/1`` document (``exit_code`` included)."""
    from aikito_mem import checkouts as _checkouts
    from aikito_mem.discovery import resolve_workspace
    from aikito_mem.model import CheckoutState
    from aikito_mem.observe import Observer
    from aikito_mem.projects import list_projects, load_project_config

    env = os.environ if environ is None else environ
    doc: dict[str, Any] = {"schema": SCHEMA, "contract_version": CONTRACT_VERSION,
                           "workspace": None, "workspace_source": None, "strict": strict,
                           "exit_code": EXIT_OK, "summary": {OK: 0, WARNING: 0, ERROR: 0},
                           "checks": [], "error": None}
    checks: list[Check] = []
    try:
        ws = resolve_workspace(workspace, environ=environ)
        names = list_projects(ws.root)
    except ConfigError as exc:
        err = exc.to_json()
        if exc.path:
            err["path"] = exc.path
        doc["error"] = err
        doc["checks"] = [Check("workspace.source", ERROR, exc.message, path=exc.path).to_json()]
        doc["summary"][ERROR] = 1
        doc["exit_code"] = EXIT_CONFIG
        return doc
    doc["workspace"], doc["workspace_source"] = ws.root, ws.found_via
    checks.append(_workspace_check(ws, env))

    memory_root = f"{ws.root}/memory"
    configs = []
    for name in names:
        try:
            configs.append(load_project_config(ws.root, name, environ=environ))
        except AikitoError as exc:
            checks.append(Check("project.config", ERROR, exc.message,
                                remedy="fix agent.toml as the message says", path=exc.path,
                                project=name))
    uses_memory = any(c.memory for c in configs)
    checks.append(_dir_check(
        "memory.root", memory_root, "workspace memory root", project=None,
        missing=ERROR if uses_memory else WARNING,
        missing_remedy=f"mkdir {memory_root}"))

    indexes: dict[str, str | None] = {}
    if os.path.isdir(memory_root) and not os.path.islink(memory_root):
        for index in _index_files(memory_root):
            indexes[index] = None
    observer = Observer()
    git_checks: list[Check] = []
    for config in configs:
        name = config.name
        warnings = [f for f in config.findings if f.severity == "warning"]
        if warnings:
            for f in warnings:
                checks.append(Check("project.config", WARNING, f"{name}: {f.message}",
                                    path=f.path or config.config_path, project=name))
        else:
            checks.append(Check("project.config", OK, f"{config.config_path} is valid",
                                path=config.config_path, project=name))
        checks.extend(_notes_checks(ws.root, name))
        current = f"{ws.root}/projects/{name}/memory/notes"
        if os.path.isdir(current) and not os.path.islink(current):
            for index in _index_files(current):
                indexes.setdefault(index, name)
        for slot in _checkouts.slots(config, observer):
            if slot.state is not CheckoutState.ACTIVE:
                continue
            found = check_git_ignore(slot.path, name, slot.label)
            if found is not None:
                git_checks.append(found)
    for index, project in sorted(indexes.items()):
        checks.extend(check_index(index, project))
    checks.extend(git_checks)

    summary = {OK: 0, WARNING: 0, ERROR: 0}
    for check in checks:
        summary[check.status] += 1
    failing = summary[ERROR] + (summary[WARNING] if strict else 0)
    doc["summary"] = summary
    doc["checks"] = [c.to_json() for c in checks]
    doc["exit_code"] = EXIT_CONFLICT if failing else EXIT_OK
    return doc


def text_report(doc: dict[str, Any], *, verbose: bool = False) -> list[str]:
    """One line per check (``ok`` ones only with ``-v``), remedies indented, a summary."""
    lines: list[str] = []
    if doc["workspace"] is not None:
        lines.append(f"workspace {doc['workspace']} ({doc['workspace_source']})")
    for check in doc["checks"]:
        if check["status"] == OK and not verbose:
            continue
        lines.append(f"{check['status']:<8} {check['id']:<17} {check['message']}")
        if check["remedy"] and check["status"] != OK:
            lines.append(f"{'':<8} {'':<17} remedy: {check['remedy']}")
    s = doc["summary"]
    strict = " (--strict: warnings count)" if doc["strict"] else ""
    lines.append(f"doctor: {s[OK]} ok, {s[WARNING]} warning{'s' * (s[WARNING] != 1)}, "
                 f"{s[ERROR]} error{'s' * (s[ERROR] != 1)}{strict}")
    return lines
