"""Where everything lives: the runtime tree of a checkout and the canonical sources of a
workspace, each rule written once ([S1], [S2], [G2], [G3], [O2], [O3], §13).

Every room asks here — the planners, observation, the writer's guard, adopt, doctor, the
renderers — so a path is spelt in one place.  Pure string functions: no I/O.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

#: The runtime tree of a checkout, relative to the checkout root.
AGENTS_DIR = ".agents"
MEMORY_DIR = f"{AGENTS_DIR}/memory"
SKILLS_DIR = f"{AGENTS_DIR}/skills"
#: The memory descriptor (read by ``status`` only) and its index, a real file kept in
#: ``.agents/memory`` (its anchor).
DESCRIPTOR_NAME = "config.yaml"
DESCRIPTOR = f"{AGENTS_DIR}/{DESCRIPTOR_NAME}"
INDEX_NAME = "MEMORY.md"
#: The descriptor's tier-1 vault (``status`` reports it; aikito never writes there).
VAULT_DIR = f"{AGENTS_DIR}/vault"
#: aikito's retired instruction link, relative to the checkout root: only ever unlinked.
LEGACY_INSTRUCTIONS = f"{AGENTS_DIR}/AGENTS.md"
#: The runtime path (below ``.agents/memory``) of the project notes ([S2]).
NOTES = "notes"
#: The suffix of a relink's fresh link while it is renamed over the old one ([L4]).
RELINK_SUFFIX = ".aikito-relink"
#: What ``git`` should ignore in a checkout (``doctor --fix``): the linked segment roots.
IGNORED = (f"{MEMORY_DIR}/", f"{SKILLS_DIR}/")

#: The directories of a workspace, relative to its root.
MEMORY_ROOT = "memory"
SKILLS_ROOT = "skills"
PROJECTS_ROOT = "projects"
AGENTS_ROOT = "agents"
INSTRUCTIONS_NAME = "AGENTS.md"
CONFIG_NAME = "agent.toml"


def memory_root(workspace: str) -> str:
    """``<ws>/memory``: the root every memory source lies in ([S1], [S3])."""
    return f"{workspace}/{MEMORY_ROOT}"


def skills_root(workspace: str) -> str:
    """``<ws>/skills``: the root every skill source lies in ([G2])."""
    return f"{workspace}/{SKILLS_ROOT}"


def projects_root(workspace: str) -> str:
    """``<ws>/projects``: one directory per project."""
    return f"{workspace}/{PROJECTS_ROOT}"


def agents_root(workspace: str) -> str:
    """``<ws>/agents``: the agent registry ([G3])."""
    return f"{workspace}/{AGENTS_ROOT}"


def project_dir(workspace: str, project: str) -> str:
    """``<ws>/projects/<p>``."""
    return f"{projects_root(workspace)}/{project}"


def project_memory(workspace: str, project: str) -> str:
    """``<ws>/projects/<p>/memory``: whose existence selects the current notes ([S2])."""
    return f"{project_dir(workspace, project)}/{MEMORY_ROOT}"


def memory_source(workspace: str, ref: str) -> str:
    """[S1]: the canonical source of memory reference ``ref`` — the lexical join of the
    physical workspace root with ``memory/<ref>``."""
    return f"{memory_root(workspace)}/{ref}"


def notes_sources(workspace: str, project: str) -> tuple[str, str]:
    """(current, legacy) notes locations of a project ([S2], [O2])."""
    return (f"{project_memory(workspace, project)}/{NOTES}",
            f"{memory_root(workspace)}/{project}/{NOTES}")


def is_notes(ref: str) -> bool:
    """Whether runtime path ``ref`` is the notes or lies below them ([S4] shadowing)."""
    return ref == NOTES or ref.startswith(f"{NOTES}/")


def skill_source(workspace: str, name: str) -> str:
    """[G2]: the canonical source of skill ``name``."""
    return f"{skills_root(workspace)}/{name}"


def instructions_source(workspace: str, project: str) -> str:
    """[G3]: the canonical source of the project instructions."""
    return f"{project_dir(workspace, project)}/{INSTRUCTIONS_NAME}"


def memory_target(checkout: str, rel: str) -> str:
    """``<checkout>/.agents/memory/<rel>``."""
    return f"{checkout}/{MEMORY_DIR}/{rel}"


def skill_target(checkout: str, name: str) -> str:
    """``<checkout>/.agents/skills/<name>``."""
    return f"{checkout}/{SKILLS_DIR}/{name}"


def relink_name(name: str) -> str:
    """[L4]: the one temporary name of a relink of the entry ``name``, in the entry's own
    directory: ``.NAME.aikito-relink``."""
    return f".{name}{RELINK_SUFFIX}"


def relink_path(rel: str) -> str:
    """``rel`` (a path relative to a segment's root or the checkout) with its last
    component's relink name: where a relink of ``rel`` makes its fresh link."""
    parent, _, name = rel.rpartition("/")
    return f"{parent}/{relink_name(name)}" if parent else relink_name(name)


def relink_target(rel: str) -> str | None:
    """``rel`` (a relative path) with its last component's relink name undone, else
    ``None``: the entry a relink's fresh link at ``rel`` stands for."""
    parent, _, name = rel.rpartition("/")
    base = relink_base(name)
    if base is None:
        return None
    return f"{parent}/{base}" if parent else base


def moved_literal(moved_from: str | None, workspace: str, source: str) -> str | None:
    """[L4]: ``OLD`` + the remainder of ``source`` below ``workspace`` — the literal a link
    to ``source`` had before the workspace moved from ``OLD``; ``None`` without it."""
    if moved_from is None or not source.startswith(workspace + "/"):
        return None
    return moved_from.rstrip("/") + source[len(workspace):]


def moved_owner(literal: str | None, moved_from: str | None, workspace: str,
                candidates: Iterable[str]) -> str | None:
    """[L4]: the candidate whose literal under the old root ``moved_from`` is ``literal``
    byte for byte (:func:`moved_literal`), else ``None``: with ``--moved-from OLD``, a link
    naming ``OLD`` + the canonical remainder of its own place is the engine's."""
    if literal is None or moved_from is None:
        return None
    for cand in candidates:
        if literal == moved_literal(moved_from, workspace, cand):
            return cand
    return None


def relink_base(name: str) -> str | None:
    """The entry a relink name belongs to (``.a.md.aikito-relink`` → ``a.md``), else
    ``None``."""
    if name.startswith(".") and name.endswith(RELINK_SUFFIX):
        base = name[1:-len(RELINK_SUFFIX)]
        if base and base not in (".", ".."):
            return base
    return None


def literal_resolves_to(literal: str, link_dir: str, expected: str) -> bool:
    """[O1]: the literal names ``expected`` byte for byte, or is a relative literal that,
    joined to the link's directory and normalised lexically, equals it."""
    if literal == expected:
        return True
    if literal.startswith("/") or not literal:
        return False
    return posixpath.normpath(posixpath.join(link_dir, literal)) == expected


def owns(literal: str | None, link_dir: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``literal`` names, or ``None`` when the link is not ours ([O1]):
    the planners' ownership test, and what observation asks before asking git ([L1])."""
    if literal is None:
        return None
    for cand in candidates:
        if literal_resolves_to(literal, link_dir, cand):
            return cand
    return None


#: The kernel's limit for a path given whole (Linux ``PATH_MAX``, the terminating NUL
#: included) — what observation passes to ``lstat`` for an instruction target and a
#: per-agent skills directory ([E5]).
PATH_MAX = 4096


def too_long(path: str) -> str | None:
    """[E5]: why the engine must not create ``path`` (a CONFLICT's reason), or ``None``.
    A target is observed by its whole path; one the kernel refuses to name
    (``ENAMETOOLONG``) would be created through directory descriptors and then make every
    later run of the checkout fail, so it is never planned for creation."""
    size = len(path.encode("utf-8", "surrogateescape"))
    if size < PATH_MAX:
        return None
    return (f"its path is {size} bytes long, more than the {PATH_MAX - 1} a path can have "
            "here: aikito would create it but never be able to look at it again")

