"""The one compare-and-swap writer of ``agent.toml`` ([K4], [E9], §11).

Every rewrite — a checkout's registration (:func:`register_checkout`), adopt's ``memory``
edit (:func:`replace_config`) — goes through :func:`swap_config`, through
:mod:`aikito_mem.fsutil`: the live bytes (read without following a symlink) must still be
the compared ones; the new bytes go to a temporary file in the same directory (same
permission bits and owner — or refused when the owner could not be kept — fsynced) that is
renamed over ``agent.toml`` only if a last re-read still finds the compared bytes.
:func:`plan_registration` makes, at planning time, every check the registration will make
([E9]), so a dry run, ``--check`` and the real run refuse alike.  The caller holds the
checkout lock; this module takes none.  The edits themselves are
:mod:`aikito_mem.config.edit`'s.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from aikito_mem import fsutil, signals
from aikito_mem.config.edit import add_checkout_path, register_failed
from aikito_mem.errors import ConfigError, ExecutionError, StalePlanError

if TYPE_CHECKING:
    from aikito_mem.model import ProjectConfig

__all__ = [
    "BY_HAND_MEMORY",
    "BY_HAND_REGISTER",
    "check_registration",
    "check_rewritable",
    "plan_registration",
    "register_checkout",
    "registered_form",
    "replace_config",
    "swap_config",
]


def _stale(config_path: str, why: str = "") -> StalePlanError:
    difference = f"agent.toml changed since planning: {config_path}"
    return StalePlanError(
        f"{difference}{why} — nothing was written; run the sync again to plan against it",
        differences=(difference,),
    )


def _read(dir_fd: int, name: str, config_path: str) -> tuple[bytes, os.stat_result]:
    """The bytes and ``fstat`` of ``agent.toml``: a regular file, never through a symlink."""
    try:
        return fsutil.read_regular(name, dir_fd=dir_fd)
    except FileNotFoundError:
        raise _stale(config_path, " (it no longer exists)") from None
    except fsutil.NotRegularFileError as exc:
        raise ConfigError(
            f"cannot register a checkout in {config_path}: it is "
            f"{fsutil.describe_mode(exc.st.st_mode)}; expected a regular file — replace it "
            "with a regular file, or pass --no-register",
            code="config.register_failed", path=config_path,
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _symlinked(dir_fd, name, config_path) from None
        if isinstance(exc, fsutil.FileTooLargeError):
            raise ConfigError(
                f"cannot register a checkout in {config_path}: it is {exc.strerror}; "
                "expected a small text file — add the checkout path by hand, or pass "
                "--no-register", code="config.register_failed", path=config_path,
            ) from None
        raise ExecutionError(
            f"cannot read {config_path}: {exc.strerror or exc}", path=config_path
        ) from None


def _symlinked(dir_fd: int, name: str, config_path: str) -> ConfigError:
    try:
        target = f" (to {os.readlink(name, dir_fd=dir_fd)!r})"
    except OSError:
        target = ""
    return ConfigError(
        f"cannot register a checkout in {config_path}: it is a symlink{target}, and "
        "registration replaces agent.toml by renaming a new file over it, which would "
        "replace the link itself; expected a regular file — add the checkout path to "
        "`paths` in the file the link points to by hand, or pass --no-register",
        code="config.register_failed", path=config_path,
    )


#: What a user can do instead of an edit aikito refuses to make, by edit.
BY_HAND_REGISTER = "add the change to it by hand, or pass --no-register"
BY_HAND_MEMORY = "add the reference to its `memory` list by hand"


def _check_owner(dir_fd: int, st: os.stat_result, config_path: str,
                 by_hand: str = BY_HAND_REGISTER) -> None:
    """Refuse (before any write) when the rewritten file could not keep its owner."""
    euid = os.geteuid()
    if euid == 0:
        return
    if st.st_uid == euid:
        directory = os.fstat(dir_fd)
        inherited = directory.st_gid if directory.st_mode & stat.S_ISGID else os.getegid()
        if st.st_gid in (inherited, os.getegid(), *os.getgroups()):
            return
    raise ConfigError(
        f"cannot keep the owner and group ({st.st_uid}:{st.st_gid}) of {config_path} when "
        f"rewriting it as user {euid}; expected a file this user owns — {by_hand}",
        code="config.register_failed", path=config_path,
    )


def swap_config(
    dir_fd: int, name: str, config_path: str, new: bytes, st: os.stat_result, old: bytes,
    by_hand: str = BY_HAND_REGISTER, before_rename: Callable[[], None] | None = None,
) -> None:
    """Replace ``name`` (in ``dir_fd``) with ``new``, iff it still holds exactly ``old``.

    ``st`` is the ``stat`` of the file ``old`` was read from: the new file keeps its
    permission bits and owner.  The temporary file is written and synced, the live bytes
    re-read, and the rename made only if they are still ``old`` (else
    :class:`StalePlanError`, nothing written) — and ``before_rename`` (if any) returns.
    An I/O failure is an :class:`ExecutionError` saying whether the file was replaced.
    """
    _check_owner(dir_fd, st, config_path, by_hand)

    def unchanged() -> None:
        live, _ = _read(dir_fd, name, config_path)
        if live != old:
            raise _stale(config_path)
        if before_rename is not None:
            before_rename()

    signals.check()
    try:
        fsutil.atomic_replace(dir_fd, name, new, mode=stat.S_IMODE(st.st_mode),
                              owner=(st.st_uid, st.st_gid), before_rename=unchanged)
    except OSError as exc:
        try:
            replaced = fsutil.read_regular(name, dir_fd=dir_fd)[0] == new
        except OSError:
            replaced = False
        state = ("it was rewritten but could not be synced to disk" if replaced
                 else "it was left unchanged")
        raise ExecutionError(
            f"cannot write {config_path}: {exc.strerror or exc}; {state}", path=config_path
        ) from None


def _open_parent(config_path: str) -> tuple[int, str]:
    directory, name = os.path.split(config_path)
    try:
        return fsutil.open_dir(directory), name
    except FileNotFoundError:
        raise _stale(config_path, " (its directory no longer exists)") from None
    except OSError as exc:
        raise ExecutionError(
            f"cannot open the directory of {config_path}: {exc.strerror}", path=config_path
        ) from None


def _edited(data: bytes, config_path: str, path: str) -> bytes:
    """``agent.toml``'s bytes with ``path`` registered (every check of the edit)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise register_failed(config_path, path, "the file is not valid UTF-8") from None
    return add_checkout_path(text, path, filename=config_path).encode("utf-8")


def register_checkout(config_path: str, path: str, *, expected_sha256: str) -> None:
    """Register ``path`` in ``config_path`` iff its bytes still hash to ``expected_sha256``.

    Raises :class:`StalePlanError` (nothing written) when the live bytes differ or the file
    is gone, :class:`ConfigError` ``config.register_failed`` when the edit cannot be made
    safely (symlinked or non-regular file, invalid UTF-8, unsupported layout, owner not
    preservable), and :class:`ExecutionError` on an I/O failure.  The caller holds the
    checkout lock.
    """
    dir_fd, name = _open_parent(config_path)
    try:
        data, st = _read(dir_fd, name, config_path)
        if fsutil.sha256_hex(data) != expected_sha256.lower().removeprefix("sha256:"):
            raise _stale(config_path)
        swap_config(dir_fd, name, config_path, _edited(data, config_path, path), st, data)
    finally:
        os.close(dir_fd)


def replace_config(config_path: str, old: bytes, new: bytes, *,
                   by_hand: str = BY_HAND_MEMORY,
                   before_rename: Callable[[], None] | None = None) -> bool:
    """Replace ``agent.toml``'s bytes ``old`` by ``new`` through :func:`swap_config` (the
    one compare-and-swap writer: owner kept or refused, live bytes re-read just before
    the rename).  ``False``, nothing written, when the live bytes are not ``old``."""
    dir_fd, name = _open_parent(config_path)
    try:
        live, st = _read(dir_fd, name, config_path)
        if live != old:
            return False
        try:
            swap_config(dir_fd, name, config_path, new, st, old, by_hand, before_rename)
        except StalePlanError:
            return False
        return True
    finally:
        os.close(dir_fd)


def check_rewritable(config_path: str, *, by_hand: str = BY_HAND_MEMORY) -> None:
    """Refuse, writing nothing, an ``agent.toml`` that :func:`replace_config` could not
    rewrite with its owner kept (checked before anything else is changed)."""
    dir_fd, name = _open_parent(config_path)
    try:
        _check_owner(dir_fd, _read(dir_fd, name, config_path)[1], config_path, by_hand)
    finally:
        os.close(dir_fd)


# ---------------------------------------------------------------------------------------
# Planning a registration ([K4], [E9])


def registered_form(path: str, home: str | None) -> str:
    """How checkout ``path`` (absolute) is written to ``agent.toml``: ``~/REL`` when it is
    under the home directory ``home``, so one ``agent.toml`` serves every machine; the
    absolute path otherwise.  ``~/REL`` expands back to exactly ``path`` ([K1])."""
    if home and os.path.isabs(home):
        base = home.rstrip("/")
        if base and path == base:
            return "~"
        if base and path.startswith(base + "/"):
            return "~/" + path[len(base) + 1 :]
    return path


def check_registration(config_path: str, path: str) -> bytes:
    """Every check :func:`register_checkout` will make, without writing ([E9]).

    ``agent.toml`` is read as the registration will read it (a regular file, never through
    a symlink), decoded, edited with ``path`` and re-parsed, and its owner checked; the
    edited bytes are returned.  Raises what the registration would raise.
    """
    try:
        dir_fd, name = _open_parent(config_path)
    except StalePlanError:
        raise _vanished(config_path) from None
    try:
        data, st = _read(dir_fd, name, config_path)
        new = _edited(data, config_path, path)
        _check_owner(dir_fd, st, config_path)
        return new
    except StalePlanError:
        raise _vanished(config_path) from None
    finally:
        os.close(dir_fd)


def _vanished(config_path: str) -> ConfigError:
    return ConfigError(
        f"{config_path} disappeared while the registration was being planned; expected "
        "the project's agent.toml — run the sync again",
        code="config.register_failed", path=config_path,
    )


def plan_registration(config: ProjectConfig, given: str, physical: str, *,
                      home: str | None, active: Iterable[tuple[str, str]]) -> str:
    """The string a sync of the unregistered checkout ``given`` will add to
    ``agent.toml``, after every check the registration makes ([K4], [E9]).

    ``physical`` is ``given`` resolved; ``active`` the (label, physical path) of every
    active checkout of the project.  A checkout inside, or containing, an active
    checkout of the same project is refused (its sync would nest one ``.agents`` tree in
    another); then :func:`check_registration` runs on the value :func:`registered_form`
    gives.  Raises :class:`ConfigError` (nothing written, exit 4) — the same error the
    real run raises, so a dry run, ``--check`` and the sync agree.
    """
    for label, path in active:
        if path == physical:
            continue
        inside = physical.startswith(path.rstrip("/") + "/")
        if inside or path.startswith(physical.rstrip("/") + "/"):
            where = "inside" if inside else "contains"
            raise ConfigError(
                f"cannot register {given}: it {'is ' * inside}{where} checkout {path} "
                f"(label {label!r}) of project {config.name!r}, listed in "
                f"{config.config_path}; expected a directory that is neither inside nor "
                f"around a registered checkout — sync that checkout instead (aikito sync "
                f"project {config.name} {path}), or pass --no-register to sync "
                f"{given} once without registering it",
                code="config.checkout_nested", path=config.config_path,
            )
    value = registered_form(given, home)
    check_registration(config.config_path, value)
    return value
