"""The checks every ``aikito adopt`` makes, whatever the segment: real directories on the
way, the destination's parents, ``agent.toml`` read and edited, how the content gets to
its destination (or why an existing one is refused, with a diff), and the observer of
the world after the move.  No write."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from aikito_mem import fsutil
from aikito_mem.commands.adopt import treecompare, treemove
from aikito_mem.commands.adopt.values import EntryType, Method
from aikito_mem.errors import EXIT_STALE, AdoptFailed, AdoptRefused, ConfigError
from aikito_mem.layout import MEMORY_DIR, SKILLS_DIR
from aikito_mem.model import Observed, ProjectConfig, SegmentName
from aikito_mem.world.observe import Observer


def lstat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def describe(st: os.stat_result | None) -> str:
    return "nothing" if st is None else fsutil.describe_mode(st.st_mode)


#: What adopt takes ([L5]), for messages.
TAKES = (f"a file or directory at <checkout>/{MEMORY_DIR}/REL, a directory at "
         f"<checkout>/{SKILLS_DIR}/NAME or in an agent's project_skills_path "
         "(<checkout>/.claude/skills/NAME, …), or a file at an instruction target "
         "(AGENTS.md, …)")


def checkout_dirs(checkout: str, rel: str) -> None:
    """Every directory from the checkout root down to TARGET's parent (TARGET at ``rel``
    relative to the checkout) is a real one."""
    path = checkout.rstrip("/")
    for part in rel.split("/")[:-1]:
        path = f"{path}/{part}"
        st = lstat_or_none(path)
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise AdoptRefused(f"{path} is {describe(st)}; expected a real directory",
                               code="through_symlink", path=path)


def missing_dirs(ws_root: str, rel: str, destination: str) -> list[str]:
    """The ancestors of the destination (at ``rel`` relative to the workspace) that do not
    exist yet; every existing one must be a real directory (adopt never writes through a
    symlink)."""
    missing: list[str] = []
    path = ws_root
    for part in rel.split("/")[:-1]:
        path = f"{path}/{part}"
        st = lstat_or_none(path)
        if st is None:
            missing.append(path)
        elif not stat.S_ISDIR(st.st_mode):
            raise AdoptRefused(
                f"{path} is {describe(st)}; expected a real directory to hold "
                f"{destination} (adopt never writes through a symlink)",
                code="destination_parent", path=path)
    return missing


def read_config(config: ProjectConfig, target: str, edit: bool) -> bytes:
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
    if data != config.data:
        raise AdoptFailed(f"{config.config_path} changed while being read; nothing was "
                          "written — run again", code="stale", content_at=target,
                          exit_code=EXIT_STALE, outcome="stale")
    if edit:
        from aikito_mem.config.write import check_rewritable

        check_rewritable(config.config_path)  # its owner kept, or refused before any move
    return data


def listed(config: ProjectConfig, segment: SegmentName, ref: str) -> bool:
    """Whether ``ref`` is already in the list adopt adds it to (``memory``, ``skills``;
    an instruction target is in no list)."""
    if segment is SegmentName.INSTRUCTIONS:
        return True
    return ref in (config.skills if segment is SegmentName.SKILLS else config.memory)


def edited_config(config: ProjectConfig, data: bytes, ref: str, home: str,
                  segment: SegmentName = SegmentName.MEMORY) -> tuple[bytes, ProjectConfig]:
    """``agent.toml`` with ``ref`` appended to ``memory`` (or ``skills``), and its parse
    ([C3], [C4], [G1])."""
    from aikito_mem.config.agent_toml import parse_project_config
    from aikito_mem.config.edit import add_list_value

    key = "skills" if segment is SegmentName.SKILLS else "memory"

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{config.config_path} is not valid UTF-8; add {ref!r} to its "
                          f"{key} list by hand", code=f"config.{key}_edit_failed",
                          path=config.config_path) from None
    new = add_list_value(text, key, ref, filename=config.config_path).encode("utf-8")
    try:
        parsed = parse_project_config(new, name=config.name, project_dir=config.project_dir,
                                      config_path=config.config_path, home=home)
    except ConfigError as exc:
        raise AdoptRefused(f"cannot adopt as {key} entry {ref!r}: with it added, {exc.message}",
                           code="reference_clash", path=config.config_path) from None
    return new, parsed


class AfterMove(Observer):
    """Observations of the world as it will be once the content is at its destination."""

    def __init__(self, present: Mapping[str, Observed]) -> None:
        super().__init__()
        self._present = dict(present)

    def lstat(self, path: str) -> Observed:
        found = self._present.get(path)
        return found if found is not None else super().lstat(path)


def destination_method(physical: str, destination: str, kind: EntryType,
                       st: os.stat_result, missing: list[str]
                       ) -> tuple[Method, tuple[treemove.Entry, ...]]:
    """How the content gets there; a destination that differs is refused, with how."""
    if lstat_or_none(destination) is None:
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
