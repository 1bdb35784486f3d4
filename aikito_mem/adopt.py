"""``aikito adopt TARGET``: move a real file or directory that blocks sync into the
workspace, add it to the project's ``memory`` list, and link it back.

Sequence (every step says where the content is if it fails):

1. **Validate, writing nothing** (this is all ``--dry-run`` does): TARGET is a regular file
   or a directory (never a symlink), reached without a symlink below the checkout root, at
   ``<checkout>/.agents/memory/REL`` of an *active* checkout registered for exactly one
   project (or the one ``--project`` names); ``REL`` is a clean reference ([C3]) that is not
   the project notes' runtime path; nothing exists at ``<ws>/memory/REL`` and every existing
   ancestor there is a real directory; the edited ``agent.toml`` re-parses to the old data
   plus ``REL`` and passes the collision rules ([C4]).
2. **Lock** the checkout (the same ``flock`` as a sync, [E3]) and re-check the target's
   identity and the destination's absence.
3. **Move**.  Same filesystem: ``renameat2(RENAME_NOREPLACE)`` — atomic, and it cannot
   replace anything that appeared at the destination.  Where the kernel or filesystem does
   not support the flag (``ENOSYS``/``EINVAL``), the fallback re-checks that the destination
   is absent just before ``os.rename``: a destination created by another process in that
   window (microseconds, while we hold the checkout lock) could be replaced — the one
   documented gap.  Across filesystems (``EXDEV``): copy to a temporary name
   ``.NAME.aikito-adopt-PID-XXXXXXXX.tmp`` in the destination directory, ``fsync`` every
   file and directory, verify size and sha256 of every file (and the literal of every
   symlink, and the set of entries) against what was read, check that the original did not
   change meanwhile, rename the temporary into place with no-replace, then remove the
   original.  Until that rename the original is untouched and the temporary is removed on
   failure; after it the copy is complete and verified.
4. **Register** ``REL`` in ``memory`` by compare-and-swap: the bytes are re-read and must be
   those the edit was computed from; the new file is written to a temporary file, fsynced
   and renamed over (the same primitive as checkout registration, [K4]).  If the file
   changed meanwhile the edit is recomputed from the new bytes and re-validated (up to
   three times).
5. **Link back** through the normal engine: a plan of that one checkout, executed under
   the lock already held.  Other checkouts of the project get the link at their next sync.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Mapping
from typing import Any

import attrs

from aikito_mem.errors import (
    EXIT_CONFLICT,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STALE,
    AikitoError,
    ConfigError,
    ConflictError,
    StalePlanError,
)

SCHEMA = "aikito.adopt/1"
CONTRACT_VERSION = 1
ANCHOR = ".agents/memory"
#: ``RENAME_NOREPLACE`` of ``renameat2(2)``.
RENAME_NOREPLACE = 1
_AT_FDCWD = -100
_CHUNK = 1 << 20


class AdoptRefused(AikitoError):
    """Adopt refused before writing anything (exit 1)."""

    exit_code = EXIT_CONFLICT
    outcome = "refused"

    def __init__(self, message: str, *, code: str, path: str | None = None) -> None:
        super().__init__(message, code=f"adopt.{code}", path=path)


class AdoptFailed(AikitoError):
    """A step failed; ``content_at`` says where the content is (exit 5, or 3 on drift)."""

    outcome = "failed"

    def __init__(self, message: str, *, code: str, content_at: str,
                 exit_code: int = EXIT_FAILED, outcome: str = "failed") -> None:
        super().__init__(message, code=f"adopt.{code}", path=content_at)
        #: Where the complete content is now.
        self.content_at = content_at
        self.exit_code = exit_code
        self.outcome = outcome


@attrs.frozen
class Adoption:
    """Everything validation found: what moves where, and the new ``agent.toml``."""

    workspace: str
    project: str
    checkout: str
    #: Physical path of TARGET.
    target: str
    reference: str
    destination: str
    kind: str
    #: ``(dev, ino)`` of TARGET when validated.
    identity: tuple[int, int]
    config_path: str
    #: Bytes of ``agent.toml`` the edit was computed from, and the edited bytes
    #: (``None`` when ``REL`` is already listed).
    config_bytes: bytes
    new_config: bytes | None
    #: Ancestors of the destination that do not exist yet (created, shallowest first).
    missing_dirs: tuple[str, ...]
    #: ``rename`` when TARGET and the destination are on the same device, else ``copy``.
    method: str


# ------------------------------------------------------------------ agent.toml: memory list


def add_memory_reference(text: str, ref: str, *, filename: str = "agent.toml") -> str:
    """See :func:`aikito_mem.config_edit.add_memory_reference` (it owns every edit of
    ``agent.toml``)."""
    from aikito_mem.config_edit import add_memory_reference as add

    return add(text, ref, filename=filename)


def _new_config(config: Any, data: bytes, ref: str, home: str) -> bytes:
    """The edited ``agent.toml`` bytes, validated by the full parser ([C3], [C4])."""
    from aikito_mem.config import parse_project_config

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        from aikito_mem.config_edit import memory_edit_failed

        raise memory_edit_failed(config.config_path, ref, "it is not valid UTF-8") from exc
    new = add_memory_reference(text, ref, filename=config.config_path).encode("utf-8")
    try:
        parse_project_config(new, name=config.name, project_dir=config.project_dir,
                             config_path=config.config_path, home=home)
    except ConfigError as exc:
        raise AdoptRefused(
            f"cannot adopt as reference {ref!r}: with it added, {exc.message}",
            code="reference_clash", path=config.config_path,
        ) from None
    return new


# ---------------------------------------------------------------------------- validation


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _describe(st: os.stat_result | None) -> str:
    from aikito_mem.observe import from_stat

    return "nothing" if st is None else from_stat(st).describe()


def _find_checkout(
    physical: str, ws_root: str, only: str | None, environ: Mapping[str, str] | None
) -> tuple[Any, str]:
    """``(config, checkout)`` whose active checkout holds ``physical`` under
    ``.agents/memory/``."""
    from aikito_mem import checkouts as _checkouts
    from aikito_mem.config import list_projects, load_project_config
    from aikito_mem.model import CheckoutState
    from aikito_mem.observe import Observer

    names = [only] if only is not None else list(list_projects(ws_root))
    observer = Observer()
    found: list[tuple[Any, str]] = []
    broken: list[str] = []
    for name in names:
        try:
            config = load_project_config(ws_root, name, environ=environ)
        except ConfigError:
            if only is not None:
                raise
            broken.append(name)
            continue
        for slot in _checkouts.slots(config, observer):
            if slot.state is not CheckoutState.ACTIVE:
                continue
            if physical.startswith(f"{slot.path.rstrip('/')}/{ANCHOR}/"):
                found.append((config, slot.path))
                break
    if len(found) == 1:
        return found[0]
    if found:
        listing = ", ".join(f"{c.name} ({p})" for c, p in found)
        raise AdoptRefused(
            f"{physical} is in a checkout registered for several projects: {listing} — "
            "choose one with --project NAME", code="ambiguous_project", path=physical,
        )
    skipped = f" (projects with a broken agent.toml were not searched: {', '.join(broken)})" \
        if broken else ""
    if f"/{ANCHOR}/" not in physical:
        raise AdoptRefused(
            f"{physical} is not inside a checkout's {ANCHOR}/ directory; adopt only takes a "
            f"file or directory at <checkout>/{ANCHOR}/REL", code="outside", path=physical,
        )
    scope = f"project {only!r}" if only is not None else "any project"
    raise AdoptRefused(
        f"{physical} is not under {ANCHOR}/ of an active checkout registered for {scope} "
        f"of workspace {ws_root}{skipped} — register the checkout first "
        "(aikito sync project NAME PATH)", code="not_registered", path=physical,
    )


def validate(
    target: str,
    workspace: str | None = None,
    *,
    project: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Adoption:
    """Step 1: every check, no write.  Raises :class:`AdoptRefused` or ``ConfigError``."""
    from aikito_mem.config import reference_problem
    from aikito_mem.discovery import home_directory, resolve_workspace

    ws = resolve_workspace(workspace, environ=environ)
    given = os.path.abspath(os.path.expanduser(target))
    name = os.path.basename(given)
    st = _lstat(given)
    if st is None:
        raise AdoptRefused(f"nothing to adopt: {given} does not exist", code="missing",
                           path=given)
    if stat.S_ISLNK(st.st_mode):
        raise AdoptRefused(
            f"{given} is a symlink; adopt moves only a real file or directory (a symlink "
            "holds no content — if it is aikito's link there is nothing to adopt; remove "
            "a foreign link yourself)", code="symlink", path=given,
        )
    if stat.S_ISREG(st.st_mode):
        kind = "file"
    elif stat.S_ISDIR(st.st_mode):
        kind = "directory"
    else:
        raise AdoptRefused(f"{given} is {_describe(st)}; expected a regular file or a "
                           "directory", code="file_type", path=given)
    physical = f"{os.path.realpath(os.path.dirname(given)).rstrip('/')}/{name}"
    config, checkout = _find_checkout(physical, ws.root, project, environ)
    base = f"{checkout.rstrip('/')}/{ANCHOR}"
    rel = physical[len(base) + 1:]
    if not given.endswith(f"/{ANCHOR}/{rel}"):
        raise AdoptRefused(
            f"{given} is reached through a symlink below the checkout (it is physically "
            f"{physical}); name the real path", code="through_symlink", path=given,
        )
    # Every directory from the checkout root down to TARGET's parent is a real directory.
    parts = [".agents", "memory", *rel.split("/")[:-1]]
    path = checkout.rstrip("/")
    for part in parts:
        path = f"{path}/{part}"
        pst = _lstat(path)
        if pst is None or not stat.S_ISDIR(pst.st_mode):
            raise AdoptRefused(f"{path} is {_describe(pst)}; expected a real directory",
                               code="through_symlink", path=path)
    problem = reference_problem(rel)
    if problem is not None:
        raise AdoptRefused(
            f"{physical} cannot become a memory reference: {rel!r} {problem} (SPEC [C3]) — "
            "rename it first", code="reference_invalid", path=physical,
        )
    from aikito_mem.observe import Observer
    from aikito_mem.resources import resolve

    notes = resolve(config, ws.root, Observer())
    if notes.notes_source is not None and (rel == "notes" or rel.startswith("notes/")):
        raise AdoptRefused(
            f"{physical} is at the runtime path of the project notes ({ANCHOR}/notes); a "
            f"reference there would be shadowed — move its contents into "
            f"{notes.notes_source} yourself, then remove it", code="notes", path=physical,
        )
    memory_root = f"{ws.root}/memory"
    destination = f"{memory_root}/{rel}"
    missing: list[str] = []
    path = ws.root
    for part in ["memory", *rel.split("/")[:-1]]:
        path = f"{path}/{part}"
        pst = _lstat(path)
        if pst is None:
            missing.append(path)
        elif missing or not stat.S_ISDIR(pst.st_mode):  # pragma: no branch
            raise AdoptRefused(
                f"{path} is {_describe(pst)}; expected a real directory to hold "
                f"{destination} (adopt never writes through a symlink)",
                code="destination_parent", path=path,
            )
    dst = _lstat(destination)
    if dst is not None:
        raise AdoptRefused(
            f"{destination} already exists ({_describe(dst)}); adopt never replaces "
            f"anything — compare it with {physical}, merge by hand, then remove {physical}",
            code="destination_exists", path=destination,
        )
    data = _read_config(config.config_path)
    if hashlib.sha256(data).hexdigest() != config.sha256:
        raise AdoptFailed(f"{config.config_path} changed while being read; nothing was "
                          "written — run again", code="stale", content_at=physical,
                          exit_code=EXIT_STALE, outcome="stale")
    home = home_directory(environ) or ""
    new = None if rel in config.memory else _new_config(config, data, rel, home)
    parent_dev = (os.lstat(os.path.dirname(missing[0])) if missing else
                  os.lstat(os.path.dirname(destination))).st_dev
    method = "rename" if parent_dev == st.st_dev else "copy"
    if method == "copy" and kind == "directory":
        inventory(physical)  # refuses FIFOs, sockets, devices before anything is written
    return Adoption(
        workspace=ws.root, project=config.name, checkout=checkout, target=physical,
        reference=rel, destination=destination, kind=kind, identity=(st.st_dev, st.st_ino),
        config_path=config.config_path, config_bytes=data, new_config=new,
        missing_dirs=tuple(missing), method=method,
    )


def _read_config(path: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot open agent.toml ({exc.strerror}); adopt rewrites "
                          "it and never through a symlink", code="config.unreadable",
                          path=path) from None
    try:
        return b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------- moving


def rename_noreplace(src: str, dst: str) -> None:
    """``rename(src, dst)`` that never replaces an existing ``dst``.

    ``renameat2(..., RENAME_NOREPLACE)`` through libc; where unavailable (old libc, or the
    filesystem rejects the flag with ``EINVAL``/``ENOSYS``/``ENOTSUP``) the fallback checks
    that ``dst`` is absent just before ``os.rename`` (racy in theory; documented).
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        fn = None
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                       ctypes.c_uint]
        fn.restype = ctypes.c_int
        if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst),
              RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), src, None, dst)
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), src, None, dst)
    os.rename(src, dst)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: One entry of a tree inventory: (rel, type, size, mtime_ns, ctime_ns, literal).
_Entry = tuple[str, str, int, int, int, str | None]


def inventory(root: str) -> list[_Entry]:
    """Every entry of ``root`` (itself first), never through a symlink.  Raises
    :class:`AdoptRefused` on a FIFO, socket or device (their content cannot be copied)."""
    out: list[_Entry] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        path = f"{root}/{rel}" if rel else root
        st = os.lstat(path)
        literal = None
        if stat.S_ISDIR(st.st_mode):
            kind = "dir"
            with os.scandir(path) as it:
                stack.extend(sorted((f"{rel}/{e.name}" if rel else e.name for e in it),
                                    reverse=True))
        elif stat.S_ISREG(st.st_mode):
            kind = "file"
        elif stat.S_ISLNK(st.st_mode):
            kind, literal = "link", os.readlink(path)
        else:
            raise AdoptRefused(
                f"{path} is {_describe(st)}; adopt across filesystems copies only files, "
                "directories and symlinks — move it out of the way first",
                code="file_type", path=path,
            )
        size = st.st_size if kind == "file" else 0
        out.append((rel, kind, size, st.st_mtime_ns, st.st_ctime_ns, literal))
    return out


def _sha256_file(path: str) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        while chunk := os.read(fd, _CHUNK):
            size += len(chunk)
            digest.update(chunk)
    finally:
        os.close(fd)
    return size, digest.hexdigest()


def _copy_file(src: str, dst: str) -> tuple[int, str]:
    """Copy ``src`` to the new file ``dst`` (O_EXCL), fsync; return size and sha256 read."""
    st = os.lstat(src)
    digest = hashlib.sha256()
    size = 0
    sfd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        dfd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      0o600)
        try:
            while chunk := os.read(sfd, _CHUNK):
                size += len(chunk)
                digest.update(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(dfd, view):]
            os.fchmod(dfd, stat.S_IMODE(st.st_mode) & 0o777)
            os.fsync(dfd)
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    return size, digest.hexdigest()


def _copy_tree(src: str, temp: str, entries: list[_Entry]) -> dict[str, tuple[int, str]]:
    """Copy every entry of the inventory to ``temp``; the hashes of what was read."""
    hashes: dict[str, tuple[int, str]] = {}
    dirs: list[tuple[str, str]] = []
    for rel, kind, _size, _m, _c, literal in entries:
        s = f"{src}/{rel}" if rel else src
        d = f"{temp}/{rel}" if rel else temp
        if kind == "dir":
            os.mkdir(d, 0o700)
            dirs.append((s, d))
        elif kind == "file":
            hashes[rel] = _copy_file(s, d)
        else:
            assert literal is not None
            os.symlink(literal, d)
    for s, d in reversed(dirs):  # deepest first: modes and times after the contents
        st = os.lstat(s)
        os.chmod(d, stat.S_IMODE(st.st_mode) & 0o777)
        os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))
        _fsync_dir(d)
    return hashes


def _verify_copy(temp: str, entries: list[_Entry], hashes: dict[str, tuple[int, str]]) -> None:
    """The copy has exactly the entries read, each file with the size and sha256 read."""
    copied = inventory(temp)
    want = [(rel, kind, size, literal) for rel, kind, size, _m, _c, literal in entries]
    got = [(rel, kind, size, literal) for rel, kind, size, _m, _c, literal in copied]
    if want != got:
        raise OSError(errno.EIO, "the copy does not have the same entries as the original")
    for rel, kind, size, *_ in copied:
        if kind != "file":
            continue
        real = _sha256_file(f"{temp}/{rel}" if rel else temp)
        if real != hashes[rel] or real[0] != size:
            raise OSError(errno.EIO, f"the copy of {rel or 'the file'} differs from what "
                          "was read (size or sha256)")


def _remove(path: str, kind: str) -> None:
    if kind == "directory":
        import shutil

        shutil.rmtree(path)
    else:
        os.unlink(path)


def _remove_copied(root: str, entries: list[_Entry]) -> None:
    """Remove exactly the inventoried entries of the original, deepest first (never
    ``rmtree``): an entry that changed since it was inventoried is kept (``EBUSY``), and an
    entry that appeared keeps its directory (``rmdir`` is never recursive, ``ENOTEMPTY``)."""
    unlinked: set[tuple[int, int]] = set()
    for rel, kind, size, mtime, ctime, literal in reversed(entries):
        path = f"{root}/{rel}" if rel else root
        if kind == "dir":
            os.rmdir(path)
            continue
        st = os.lstat(path)
        now = "file" if stat.S_ISREG(st.st_mode) else "link" if stat.S_ISLNK(st.st_mode) \
            else "other"
        # ctime also moves when we unlink another hard link of the same inode.
        same = (now, st.st_mtime_ns) == (kind, mtime) and (
            st.st_ctime_ns == ctime or (st.st_dev, st.st_ino) in unlinked) and (
            st.st_size == size if kind == "file" else os.readlink(path) == literal)
        if not same:
            raise OSError(errno.EBUSY, f"{path} changed after it was copied", path)
        os.unlink(path)
        unlinked.add((st.st_dev, st.st_ino))


def _discard(path: str) -> None:
    """Remove a temporary copy (never the original)."""
    if os.path.isdir(path) and not os.path.islink(path):
        _remove(path, "directory")
    elif os.path.lexists(path):
        os.unlink(path)


def _copy_move(a: Adoption) -> None:
    """Move across filesystems: copy, verify, rename into place, remove the original."""
    entries = inventory(a.target)
    parent = os.path.dirname(a.destination)
    temp = f"{parent}/.{os.path.basename(a.destination)}.aikito-adopt-{os.getpid()}-" \
           f"{secrets.token_hex(4)}.tmp"
    placed = False
    try:
        hashes = _copy_tree(a.target, temp, entries)
        _fsync_dir(parent)
        _verify_copy(temp, entries, hashes)
        if inventory(a.target) != entries:
            raise AdoptFailed(
                f"{a.target} changed while it was being copied; nothing was adopted, it is "
                "still there, complete — run adopt again when it is quiet",
                code="source_changed", content_at=a.target, exit_code=EXIT_STALE,
                outcome="stale")
        rename_noreplace(temp, a.destination)
        placed = True
        _fsync_dir(parent)
    except BaseException:
        if not placed:
            with contextlib.suppress(OSError):
                _discard(temp)
        raise
    if inventory(a.target) != entries:
        raise AdoptFailed(
            f"{a.target} changed just after it was copied to {a.destination}; both were "
            f"kept — compare them, keep the right one (the copy at {a.destination} is what "
            "the original was before the change)", code="source_changed",
            content_at=a.destination, exit_code=EXIT_STALE, outcome="partial")
    try:
        _remove_copied(a.target, entries)
    except OSError as exc:
        raise AdoptFailed(
            f"the content is complete and verified at {a.destination}, but removing the "
            f"original {a.target} failed ({exc.strerror}); what remains of it was kept "
            "because it was not copied or changed after the copy — compare it with "
            f"{a.destination}, move what you need, remove it, then run `aikito sync "
            f"project {a.project} {a.checkout}`", code="remove_failed",
            content_at=a.destination, outcome="partial") from None


# ------------------------------------------------------------------------------- adopting


def _doc(a: Adoption | None, *, dry_run: bool) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "contract_version": CONTRACT_VERSION,
        "workspace": a.workspace if a else None,
        "project": a.project if a else None,
        "checkout": a.checkout if a else None,
        "target": a.target if a else None,
        "reference": a.reference if a else None,
        "destination": a.destination if a else None,
        "kind": a.kind if a else None,
        "method": a.method if a else None,
        "dry_run": dry_run,
        "outcome": "planned",
        "exit_code": EXIT_OK,
        "content_at": a.target if a else None,
        "steps": [
            {"step": "move", "status": "planned" if a else "not_applied"},
            {"step": "register", "status": ("skipped" if a and a.new_config is None
                                             else "planned" if a else "not_applied")},
            {"step": "link", "status": "planned" if a else "not_applied"},
        ],
        "sync": None,
        "error": None,
    }


def _set(doc: dict[str, Any], step: str, status: str, detail: str | None = None) -> None:
    for entry in doc["steps"]:
        if entry["step"] == step:
            entry["status"] = status
            if detail is not None:
                entry["detail"] = detail


def _error_doc(doc: dict[str, Any], exc: AikitoError) -> dict[str, Any]:
    err = exc.to_json()
    if exc.path:
        err["path"] = exc.path
    doc["error"] = err
    doc["outcome"] = exc.outcome
    doc["exit_code"] = exc.exit_code
    for entry in doc["steps"]:
        if entry["status"] == "planned":
            entry["status"] = "not_applied"
    return doc


def _register(a: Adoption, environ: Mapping[str, str] | None) -> bool:
    """Step 4: compare-and-swap the memory list.  ``False`` when already listed."""
    from aikito_mem.config import parse_project_config
    from aikito_mem.config_edit import swap_config
    from aikito_mem.discovery import home_directory

    home = home_directory(environ) or ""
    directory, name = os.path.split(a.config_path)
    old, new = a.config_bytes, a.new_config
    for _attempt in range(3):
        if new is None:
            return False
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            swap_config(dir_fd, name, a.config_path, new, st, old)
            return True
        except StalePlanError:
            old = _read_config(a.config_path)
            config = parse_project_config(
                old, name=a.project, project_dir=os.path.dirname(a.config_path),
                config_path=a.config_path, home=home)
            new = None if a.reference in config.memory else \
                _new_config(config, old, a.reference, home)
        finally:
            os.close(dir_fd)
    raise StalePlanError(f"{a.config_path} kept changing while adopt tried to update it",
                         differences=(f"agent.toml changed: {a.config_path}",))


def _examine_failed(exc: OSError, content_at: str) -> AdoptFailed:
    """An ``OSError`` no step converted: while examining (nothing was written)."""
    where = f"{exc.filename}: " if exc.filename else ""
    return AdoptFailed(f"cannot examine {where}{exc.strerror or exc}; the content is at "
                       f"{content_at}", code="examine_failed",
                       content_at=content_at)


def adopt(
    target: str,
    workspace: str | None = None,
    *,
    project: str | None = None,
    dry_run: bool = False,
    lock_timeout: float = 30.0,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Adopt TARGET; return the ``aikito.adopt/1`` document (never raises AikitoError)."""
    try:
        try:
            a = validate(target, workspace, project=project, environ=environ)
        except OSError as oserr:
            raise _examine_failed(oserr, os.path.abspath(os.path.expanduser(target))) \
                from None
    except AikitoError as exc:
        doc = _doc(None, dry_run=dry_run)
        given = os.path.abspath(os.path.expanduser(target))
        if isinstance(exc, AdoptFailed):
            doc["content_at"] = exc.content_at
        elif os.path.lexists(given):
            doc["content_at"] = given
        return _error_doc(doc, exc)
    doc = _doc(a, dry_run=dry_run)
    if dry_run:
        return doc
    from aikito_mem.execute import Locks

    try:
        try:
            with Locks() as locks:
                locks.acquire([a.checkout], lock_timeout)
                _locked(a, doc, locks, environ)
        except OSError as oserr:  # every step after the move converts its own OSError
            raise _examine_failed(oserr, doc["content_at"]) from None
    except AikitoError as exc:
        if isinstance(exc, AdoptFailed):
            doc["content_at"] = exc.content_at
        _error_doc(doc, exc)
    return doc


def _locked(a: Adoption, doc: dict[str, Any], locks: Any, environ: Mapping[str, str] | None
            ) -> None:
    from aikito_mem.api import Project
    from aikito_mem.execute import execute
    from aikito_mem.render import json_document

    # Step 2: the world must still be what was validated.
    st = _lstat(a.target)
    if st is None or (st.st_dev, st.st_ino) != a.identity:
        raise AdoptFailed(f"{a.target} changed since it was examined ({_describe(st)} now); "
                          "nothing was written — run adopt again", code="stale",
                          content_at=a.target, exit_code=EXIT_STALE, outcome="stale")
    if _lstat(a.destination) is not None:
        raise AdoptRefused(f"{a.destination} appeared meanwhile; nothing was written",
                           code="destination_exists", path=a.destination)
    # Step 3: move.
    created: list[str] = []
    try:
        for path in a.missing_dirs:
            os.mkdir(path, 0o755)
            created.append(path)
        try:
            rename_noreplace(a.target, a.destination)
            method = "rename"
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            method = "copy"
            _copy_move(a)
    except AikitoError as exc:
        if not isinstance(exc, AdoptFailed) or exc.content_at == a.target:
            for path in reversed(created):
                with contextlib.suppress(OSError):
                    os.rmdir(path)
            _set(doc, "move", "failed" if isinstance(exc, AdoptFailed) else "not_applied")
        else:
            doc["method"] = "copy"
            _set(doc, "move", "applied")
        raise
    except OSError as exc:
        for path in reversed(created):
            with contextlib.suppress(OSError):
                os.rmdir(path)
        _set(doc, "move", "failed")
        why = exc.strerror or str(exc)
        raise AdoptFailed(
            f"moving {a.target} to {a.destination} failed ({why}); nothing was moved, the "
            f"content is still at {a.target}", code="move_failed", content_at=a.target,
        ) from None
    doc["method"] = method
    doc["content_at"] = a.destination
    _set(doc, "move", "applied")
    # Step 4: register.
    try:
        registered = _register(a, environ)
    except (AikitoError, OSError) as exc:
        _set(doc, "register", "failed")
        why = exc.message if isinstance(exc, AikitoError) else (exc.strerror or str(exc))
        code = exc.exit_code if isinstance(exc, StalePlanError) else EXIT_FAILED
        raise AdoptFailed(
            f"the content is now at {a.destination} (moved), but adding {a.reference!r} to "
            f"the memory list of {a.config_path} failed: {why} — add it by hand, then run "
            f"`aikito sync project {a.project} {a.checkout}`", code="register_failed",
            content_at=a.destination, exit_code=code, outcome="partial") from None
    _set(doc, "register", "applied" if registered else "skipped")
    # Step 5: link back through the engine, under the lock already held.
    try:
        plan = Project.load(a.project, a.workspace, environ=environ).plan(
            a.checkout, register=False)
        result = execute(plan, locks=locks)
    except ConflictError as exc:
        conflicts = "; ".join(f"{op.target}: {op.reason}" for op in exc.conflicts)
        _set(doc, "link", "blocked")
        doc["sync"] = json_document(project=a.project, workspace=a.workspace, dry_run=True,
                                    outcome="blocked", exit_code=EXIT_CONFLICT,
                                    plan=exc.plan)
        raise AdoptFailed(
            f"the content is now at {a.destination} and {a.reference!r} is in the memory "
            f"list, but the checkout {a.checkout} has other conflicts, so the link was not "
            f"created: {conflicts} — resolve them, then run `aikito sync project "
            f"{a.project} {a.checkout}`", code="link_blocked", content_at=a.destination,
            exit_code=EXIT_CONFLICT, outcome="partial") from None
    except AikitoError as exc:
        _set(doc, "link", "failed")
        raise AdoptFailed(
            f"the content is now at {a.destination} and {a.reference!r} is in the memory "
            f"list, but linking it back failed: {exc.message} — run `aikito sync project "
            f"{a.project} {a.checkout}`", code="link_failed", content_at=a.destination,
            exit_code=exc.exit_code, outcome="partial") from None
    _set(doc, "link", "applied")
    doc["sync"] = json_document(project=a.project, workspace=a.workspace, dry_run=False,
                                outcome=result.outcome, exit_code=EXIT_OK, result=result)
    doc["outcome"] = "adopted"


def text_report(doc: dict[str, Any]) -> list[str]:
    """Human lines for the document (the error message goes to stderr, by the CLI)."""
    lines: list[str] = []
    if doc["target"] is None:
        return lines
    how = {"rename": "rename", "copy": "copy across filesystems, verify, remove"}.get(
        doc["method"] or "", "")
    verb = "would move" if doc["dry_run"] else "move"
    steps = {s["step"]: s["status"] for s in doc["steps"]}
    lines.append(f"adopt {doc['target']} (project {doc['project']}, checkout "
                 f"{doc['checkout']})")
    lines.append(f"  {verb}: {doc['target']} -> {doc['destination']} ({how}) "
                 f"[{steps['move']}]")
    reg = "already listed" if steps["register"] == "skipped" else steps["register"]
    lines.append(f"  memory list: add {doc['reference']!r} [{reg}]")
    lines.append(f"  link: {doc['target']} -> {doc['destination']} [{steps['link']}]")
    if doc["dry_run"] and doc["error"] is None:
        lines.append("dry run: nothing was written")
    elif doc["outcome"] == "adopted":
        lines.append(f"done: {doc['reference']} adopted; its content is at {doc['destination']}")
    elif doc["content_at"]:
        lines.append(f"the content is at {doc['content_at']}")
    return lines
