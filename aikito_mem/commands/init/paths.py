"""Paths for ``aikito init``: where the workspace goes, which parents exist, how a checkout
is registered, and where the pointer file of [W1] is written.

Pure observation (``lstat``/``stat``/``realpath``/``access`` and one small read of an
existing pointer file): nothing here writes.  :mod:`aikito_mem.commands.init.run` turns the results
into steps and writes them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Mapping

from aikito_mem import fsutil, layout
from aikito_mem.config.discovery import DEFAULT_WORKSPACE, expand_home, pointer_path
from aikito_mem.errors import ConfigError
from aikito_mem.model import Finding

__all__ = [
    "PointerStep",
    "check_path_text",
    "checkout_registration",
    "pointer_plan",
    "split_existing",
    "work_tree_root",
    "workspace_target",
]

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_POINTER_LIMIT = 64 * 1024

#: ``(anchor, parts, role, exists, data)`` of one pointer-file step.
PointerStep = tuple[str, tuple[str, ...], str, bool, bytes]


def check_path_text(path: str, what: str) -> None:
    """A path with a control character, or not valid UTF-8, is a ``ConfigError`` ([C6]).

    Such a path cannot be written in the pointer file (one line of UTF-8) or read back
    reliably from TOML.
    """
    control = _CONTROL.search(path)
    if control is not None:
        why = f"contains the control character U+{ord(control.group()):04X}"
    else:
        try:
            path.encode("utf-8")
            return
        except UnicodeEncodeError:
            why = "is not valid UTF-8"
    raise ConfigError(
        f"{what} {path!r} {why}; expected a path of printable UTF-8 characters — "
        "rename it or choose another; nothing was written",
        code="config.init_path", path=path,
    )


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        raise ConfigError(
            "the current directory no longer exists, so a relative path cannot be "
            "resolved; expected an existing current directory — cd somewhere and run "
            "the command again, or pass an absolute path",
            code="config.cwd_missing",
        ) from None


def workspace_target(
    path: str | None, env: Mapping[str, str], home: str | None
) -> tuple[str, str]:
    """``(found_via, absolute path)`` of the workspace ``aikito init`` creates.

    ``path`` (a CLI path: relative to the current directory), else ``AIKITO_DIR``, else
    ``~/aikito`` — where discovery ([W1]) would look, the pointer file aside (``init``
    writes it).
    """
    if path is not None:
        found_via, given = "argument", path
    elif env.get("AIKITO_DIR", ""):
        found_via, given = "AIKITO_DIR", env["AIKITO_DIR"]
    else:
        found_via, given = "default", DEFAULT_WORKSPACE
    expanded = expand_home(given, home)
    if not os.path.isabs(expanded):
        if found_via == "argument" and expanded and not expanded.startswith("~"):
            expanded = os.path.join(_cwd(), expanded)
        else:
            origin = {"argument": "the PATH argument", "AIKITO_DIR": "AIKITO_DIR",
                      "default": "the default ~/aikito"}[found_via]
            raise ConfigError(
                f"workspace {given!r} ({origin}) is not an absolute path (empty, relative, "
                "'~user', or '~' without HOME set); expected an absolute directory path — "
                "pass PATH as an absolute path",
                code="config.workspace_not_absolute", path=given,
            )
    check_path_text(expanded, "workspace path")
    return found_via, expanded


def split_existing(path: str) -> tuple[str, tuple[str, ...]]:
    """``(physical existing ancestor, missing components)`` of the absolute ``path``.

    Empty and ``.`` components are dropped; a ``..`` is left to the kernel while it
    follows an existing directory, and refused after a missing one (there is nothing to
    resolve it against).  The existing part must be a directory (a symlink to one is
    followed: ``realpath``).
    """
    parts = [p for p in path.split("/") if p not in ("", ".")]
    existing = len(parts)
    while existing > 0 and not os.path.lexists("/" + "/".join(parts[:existing])):
        existing -= 1
    missing = tuple(parts[existing:])
    if ".." in missing:
        raise ConfigError(
            f"{path} has a '..' after a directory that does not exist; expected a path "
            "whose missing directories are named plainly — spell it without '..'",
            code="config.init_path", path=path,
        )
    base = "/" + "/".join(parts[:existing])
    try:
        st = os.stat(base)
    except OSError:
        st = None
    if st is None or not stat.S_ISDIR(st.st_mode):
        found = "a dangling symlink" if st is None else fsutil.describe_mode(st.st_mode)
        raise ConfigError(
            f"{base} is {found}; expected a directory to create {path} in — move it "
            "away or choose another path; nothing was written",
            code="config.init_wrong_type", path=base,
        )
    return os.path.realpath(base), missing


def checkout_registration(checkout: str, home: str | None) -> tuple[str, str]:
    """``(absolute path, registered spelling)`` of an ``init project`` checkout ([K4]).

    The same as ``aikito sync project NAME PATH`` registers: the path as the kernel
    reaches it (:func:`aikito_mem.world.checkouts.given_path`: relative to the current directory,
    a ``..`` resolved physically), written ``~/…`` when under the home directory, else
    absolute (:func:`aikito_mem.config.write.registered_form`).  It must be an existing
    directory: a checkout is never created.
    """
    from aikito_mem.config.write import registered_form
    from aikito_mem.world.checkouts import given_path

    check_path_text(checkout, "checkout path")
    expanded = expand_home(checkout, home)
    if expanded.startswith("~") or not expanded:
        raise ConfigError(
            f"checkout path {checkout!r} cannot be used ('~user', '~' without HOME set, or "
            "empty); expected the path of an existing directory — pass an absolute path",
            code="config.checkout_path", path=checkout,
        )
    given = given_path(expanded)
    try:
        st: os.stat_result | None = os.stat(given)
    except OSError:
        st = None
    if st is None or not stat.S_ISDIR(st.st_mode):
        found = "does not exist" if st is None else f"is {fsutil.describe_mode(st.st_mode)}"
        raise ConfigError(
            f"checkout {given} {found}; expected an existing directory (aikito never "
            "creates a checkout) — clone or create it first, or pass the right path",
            code="config.checkout_path", path=given,
        )
    return given, registered_form(given, home)


def _work_tree_top(cwd: str) -> str | None:
    """The top level of the git work tree holding ``cwd`` (asked through the git room),
    ``None`` outside one or when git fails or is slow; where git cannot be started (not
    installed), the nearest directory from ``cwd`` up that holds a ``.git``."""
    from aikito_mem.world import git

    tree = git.work_tree(cwd)
    if isinstance(tree, git.WorkTree):
        return tree.top if os.path.isabs(tree.top) else None
    if isinstance(tree, git.Unavailable) and not tree.started:
        return _walk_up_for_git(cwd)
    return None


def _walk_up_for_git(cwd: str) -> str | None:
    """The nearest directory from ``cwd`` up that holds a ``.git`` (a directory, or the
    file of a linked worktree): where git is not installed."""
    here = os.path.realpath(cwd)
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _ancestors(path: str) -> list[os.stat_result]:
    """The identities of ``path`` and of every directory above it."""
    out = []
    here = path
    while True:
        with contextlib.suppress(OSError):
            out.append(os.stat(here))
        parent = os.path.dirname(here)
        if parent == here:
            return out
        here = parent


def _never_a_checkout(root: str, workspace: str, home: str | None) -> bool:
    """[H1] by the kernel's identities: ``/``, the home directory or one of its ancestors,
    the workspace, a directory inside it, or one of its ancestors."""
    try:
        st = os.stat(root)
    except OSError:
        return True
    if any(_same(st, up) for up in _ancestors(workspace)):
        return True  # the workspace itself or one of its ancestors (``/`` included)
    if home and any(_same(st, up) for up in _ancestors(os.path.realpath(home))):
        return True  # the home directory or one of its ancestors
    try:
        ws = os.stat(workspace)
    except OSError:
        return False
    return any(_same(ws, up) for up in _ancestors(os.path.realpath(root))[1:])


def work_tree_root(workspace: str, home: str | None, cwd: str | None = None) -> str | None:
    """[U1]: the root of the git work tree holding ``cwd`` (the current directory) — the
    checkout ``aikito init project NAME`` registers when no CHECKOUT is given — or
    ``None`` outside a work tree, or where that root can never be a checkout ([H1]: ``/``,
    the home directory, the workspace, anything inside it or above it).  Asks
    ``git rev-parse --show-toplevel`` (2 s at most); without git, walks up to a ``.git``."""
    root = _work_tree_top(_cwd() if cwd is None else cwd)
    if root is None or _never_a_checkout(root, workspace, home):
        return None
    return root


# --------------------------------------------------------------------------- pointer


def _warn(findings: list[Finding], message: str, path: str | None) -> None:
    findings.append(Finding("init.pointer", "warning", message, path))


def _pointer_names(pointer: str, home: str | None) -> tuple[str | None, str | None]:
    """``(path named, problem)`` of an existing pointer file."""
    try:
        data, _ = fsutil.read_regular(pointer, follow=True, limit=_POINTER_LIMIT)
        line = data.decode("utf-8").removeprefix("\ufeff").split("\n", 1)[0].strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or "not valid UTF-8"
        return None, reason
    return (expand_home(line, home) if line else None), None


#: The role of the step that re-points an existing pointer file ([L4]).
REPOINT = "pointer_repointed"


def names_a_workspace(path: str) -> bool:
    """Whether ``path`` (from a pointer file) is a directory holding ``projects/``."""
    return os.path.isdir(os.path.join(path, layout.PROJECTS_ROOT))


def pointer_plan(
    root: str, env: Mapping[str, str], home: str | None, findings: list[Finding]
) -> tuple[str | None, list[PointerStep]]:
    """The pointer file of [W1] and the steps to write it when none exists.

    Every problem on the way (no home directory, a symlinked or non-directory
    ``aikito/`` config directory, a directory that cannot be written) leaves the pointer
    unwritten with a warning finding: the workspace is still usable with ``AIKITO_DIR``.
    An existing pointer file is never changed; a warning says when it names another
    workspace.
    """
    remedy = f"set AIKITO_DIR={root} or pass --workspace {root}"
    other = env.get("AIKITO_DIR", "")
    if other:
        env_named = expand_home(other, home)
        if not os.path.isabs(env_named) or os.path.realpath(env_named) != root:
            _warn(findings, f"AIKITO_DIR is set to {other!r}, which commands use before "
                  "the pointer file: they will not find this workspace by default — "
                  f"unset AIKITO_DIR or set it to {root}", None)
    pointer = pointer_path(env)
    if pointer is None:
        _warn(findings, f"no home directory is known, so no pointer file was written — "
              f"{remedy}", None)
        return None, []
    config_dir = os.path.dirname(pointer)
    if os.path.lexists(pointer):
        named, problem = _pointer_names(pointer, home)
        if problem is not None:
            _warn(findings, f"pointer file {pointer} exists but cannot be read ({problem}); "
                  f"left as it is — fix it, or {remedy}", pointer)
        elif named is not None and os.path.isabs(named) and os.path.realpath(named) != root \
                and not names_a_workspace(named):
            # [L4]: the workspace it named is gone (moved, most likely): point at this one.
            findings.append(Finding(
                "init.pointer_repointed", "info",
                f"pointer file {pointer} named {named}, which no longer exists (no "
                f"projects/ there); it now names {root} — if the workspace moved, relink "
                f"the checkouts with: aikito sync --moved-from {named}", pointer))
            return pointer, [(config_dir, (os.path.basename(pointer),), REPOINT, False,
                              (root + "\n").encode("utf-8"))]
        elif named is None or not os.path.isabs(named) or os.path.realpath(named) != root:
            _warn(findings, f"pointer file {pointer} names {named!r}, another workspace "
                  "that exists; left as it is — edit it to make this workspace the default, "
                  f"or {remedy}", pointer)
        return pointer, [(config_dir, (os.path.basename(pointer),), "pointer", True, b"")]
    if home is not None and not os.path.isdir(home):
        _warn(findings, f"the home directory {home} does not exist, so no pointer file was "
              f"written — {remedy}", pointer)
        return pointer, []
    try:
        st: os.stat_result | None = os.lstat(config_dir)
    except OSError:
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        _warn(findings, f"{config_dir} is {fsutil.describe_mode(st.st_mode)}, not a "
              f"directory, so no pointer file was written (never through a symlink) — "
              f"{remedy}", pointer)
        return pointer, []
    try:
        anchor, missing = split_existing(config_dir)
    except ConfigError as exc:
        _warn(findings, f"no pointer file was written: {exc.message.split(';')[0]} — "
              f"{remedy}", pointer)
        return pointer, []
    if not os.access(anchor, os.W_OK | os.X_OK, effective_ids=True):
        _warn(findings, f"cannot write in {anchor} ({os.strerror(errno.EACCES)}), so no "
              f"pointer file was written — {remedy}", pointer)
        return pointer, []
    steps: list[PointerStep] = [
        (anchor, missing[: i + 1], "config_dir", False, b"") for i in range(len(missing))
    ]
    steps.append((anchor, (*missing, os.path.basename(pointer)), "pointer", False,
                  (root + "\n").encode("utf-8")))
    return pointer, steps
