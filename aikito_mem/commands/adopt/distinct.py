"""[H2] adopt never removes the only copy: TARGET must be a checkout's own entry, a distinct
object from its destination in the workspace, reached without a mount point.

Every test here is by the kernel's identity (``st_dev``, ``st_ino``), never by comparing
path strings:

- :func:`outside_workspace` — TARGET, and each directory above it, is none of the
  workspace's directories (its root, ``memory/``, ``skills/``, ``projects/``: the same
  :class:`~aikito_mem.world.checkouts.Places` a sync refuses checkouts by, [H1]); a
  workspace at ``<checkout>/.agents`` or a ``.agents/memory`` that *is* ``<ws>/memory``
  (a symlink or a bind mount) is refused here, before anything else is looked at;
- :func:`no_mount_point` — no directory from ``<checkout>/.agents`` down to TARGET, and no
  directory inside TARGET's tree, is a mount point (another device than its parent's, or a
  bind mount: the mount table);
- :func:`distinct_from_destination` — TARGET is not the destination, does not contain it
  and is not inside it.

Each raises :class:`~aikito_mem.errors.AdoptUnsafe` (exit 4, nothing written).
"""

from __future__ import annotations

import os
import stat

from aikito_mem.errors import AdoptUnsafe
from aikito_mem.world.observe import Observer, mount_points


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _ancestors(path: str) -> list[str]:
    out: list[str] = []
    while path != "/":
        path = os.path.dirname(path) or "/"
        out.append(path)
    return out


def outside_workspace(physical: str, st: os.stat_result, ws_root: str) -> None:
    """TARGET (``physical``, ``lstat`` ``st``) is not the workspace's own entry."""
    from aikito_mem.world.checkouts import Places

    places = Places.of(ws_root, None, None, Observer())
    for path, identity in ((physical, _identity(st)),
                           *((p, places.ident(p)) for p in _ancestors(physical))):
        words = places.inside.get(identity) if identity is not None else None
        if words is None:
            continue
        where = "is" if path == physical else f"is inside ({path} is)"
        raise AdoptUnsafe(
            f"{physical} {where} {words} — the workspace's own copy, reached through the "
            "checkout (a workspace inside the checkout, a symlink or a bind mount); adopting "
            "it would remove the only copy; nothing was changed — adopt takes a checkout's "
            "own file or directory, never the workspace's", code="in_workspace",
            path=physical)


def _is_mount(path: str, st: os.stat_result, parent: os.stat_result,
              table: frozenset[str] | None) -> bool:
    return st.st_dev != parent.st_dev or (table is not None and path in table)


def no_mount_point(physical: str, st: os.stat_result, checkout: str) -> None:
    """No directory from ``<checkout>/.agents`` down to TARGET, nor inside TARGET's tree,
    is a mount point: a dev container's volume at ``.agents/memory/team`` is the
    workspace's copy itself."""
    table = mount_points()
    path = checkout.rstrip("/")
    parent = os.lstat(path)
    for part in physical[len(path) + 1:].split("/"):
        path = f"{path}/{part}"
        here = st if path == physical else os.lstat(path)
        if _is_mount(path, here, parent, table):
            _refuse_mount(physical, path)
        parent = here
    if not stat.S_ISDIR(st.st_mode):
        return
    stack = [(physical, st)]
    while stack:
        top, top_st = stack.pop()
        with os.scandir(top) as it:
            entries = [(e.path, e.is_dir(follow_symlinks=False)) for e in it]
        for sub, is_dir in entries:
            if not is_dir:
                continue
            sub_st = os.lstat(sub)
            if _is_mount(sub, sub_st, top_st, table):
                _refuse_mount(physical, sub)
            stack.append((sub, sub_st))


def _refuse_mount(physical: str, mount: str) -> None:
    where = "is" if mount == physical else f"holds one ({mount})"
    raise AdoptUnsafe(
        f"{physical} {where} a mount point — what is mounted there may be the workspace's "
        "own copy (a dev container's volume, a bind mount); adopt never moves or removes "
        "across a mount point; nothing was changed — unmount it first, or move the content "
        "into the workspace yourself", code="mount_point", path=mount)


def distinct_from_destination(physical: str, st: os.stat_result, destination: str) -> None:
    """TARGET and ``<ws>/memory/REL`` are two objects, neither inside the other."""
    try:
        dest = os.lstat(destination)
    except (FileNotFoundError, NotADirectoryError):
        dest = None
    target = _identity(st)
    if dest is not None and _identity(dest) == target:
        raise AdoptUnsafe(
            f"{physical} is the same file or directory as {destination} (device "
            f"{st.st_dev}, inode {st.st_ino}: a hard link or a mount), not a copy of it; "
            "adopt replaces only a distinct identical copy, never the workspace's own "
            "entry; nothing was changed", code="same_object", path=physical)
    for path in _ancestors(destination):
        try:
            found = _identity(os.stat(path))
        except OSError:
            continue
        if found == target:
            raise AdoptUnsafe(
                f"{physical} contains the workspace's {destination} (it is {path}); "
                "adopting it would move or remove the workspace itself; nothing was "
                "changed", code="same_object", path=physical)
