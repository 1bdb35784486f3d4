"""The words of the planners' remedies ([U2]): shell-quoted paths a user can paste,
and the remedies for a mount point or a file or directory where a link is wanted (naming
``aikito adopt`` wherever adopting resolves the conflict, [P3] [L5]).  Pure.  Imported by
the branches that name a remedy or a foreign entry only: an in-sync run never loads it
([§12])."""

from __future__ import annotations

from aikito_mem.model import Finding, Kind, Observed, Resource

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def quote(word: str) -> str:
    """``word`` as one shell word (what ``shlex.quote`` writes, without importing it:
    the planner imports nothing but the model), so a remedy can be pasted ([U2])."""
    if word and all(ch in _SAFE for ch in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def unmount_remedy(target: str, name: str, config_path: str) -> str:
    """The remedy for a mount point where a link or a real directory is needed ([E5])."""
    return (f"unmount {target} (aikito never writes into, looks into or removes another "
            f"mounted filesystem), or remove {name!r} from memory in {config_path}")


def foreign_link_remedy(target: str) -> str:
    """The remedy for a link this workspace does not own at a target ([O1]) that git
    does not track ([L1]: a tracked one is SKIP, and never gets this remedy)."""
    return (f"remove the link {quote(target)} if you no longer need it (aikito never "
            "replaces links it does not own)")


def adopt_remedy(target: str, res: Resource, obs: Observed, config_path: str) -> str:
    """The remedy for a file or directory at a desired memory target: ``aikito adopt``
    where adopting resolves it (a reference: the content moves into the workspace, or an
    identical copy is replaced by the link), else moving it out of the way."""
    if not res.is_notes and obs.kind in (Kind.FILE, Kind.DIR):
        return (f"aikito adopt {quote(target)} (replaces it with the link when it is an "
                f"identical copy of {res.source}; shows the differences otherwise), or move "
                f"it out of the way, or remove {res.name!r} from memory in {config_path}")
    return (f"move {target} out of the way (aikito never overwrites it), or remove "
            f"{res.name!r} from memory in {config_path}")


def skill_dir_remedy(target: str, res: Resource, config_path: str) -> str:
    """[L5] [N1]: the remedy for a real directory, git does not track, at a skill's target
    — ``.agents/skills/NAME`` or an agent's own skills directory (``.claude/skills/NAME``):
    ``aikito adopt`` resolves it (the content moves to ``<ws>/skills/NAME``, or an
    identical copy is replaced by the link) wherever the source is missing or safe."""
    if res.missing:
        return (f"aikito adopt {quote(target)} (moves it to {res.source} and links it "
                f"back), or create the directory {res.source} yourself, or remove "
                f"{res.name!r} from skills in {config_path}")
    return (f"aikito adopt {quote(target)} (replaces it with the link when it is an "
            f"identical copy of {res.source}; shows the differences otherwise), or move it "
            f"out of the way, or remove {res.name!r} from skills in {config_path}")


def foreign_finding(target: str, obs: Observed) -> Finding:
    """[P2]: an entry aikito did not create, preserved (a mount point is never entered)."""
    return Finding(
        "memory.foreign_entry", "warning",
        f"preserved {target}: a mount point (another filesystem is mounted there); aikito "
        "never looks into, writes into or removes a mount — unmount it yourself if it is "
        "not needed" if obs.kind is Kind.MOUNT else
        f"preserved {target}: {obs.describe()} that aikito did not create; it is left "
        "untouched — to share it with every checkout: aikito adopt "
        f"{quote(target)} (moves it into the workspace and links it back); else remove it "
        "yourself if it is not needed" if obs.kind is Kind.FILE else
        f"preserved {target}: {obs.describe()} that aikito did not create; it is left "
        "untouched (remove it yourself if it is not needed)",
        target,
    )


def relink_name_conflict(target: str, stands_for: str, obs: Observed) -> tuple[str, str]:
    """[L8]: (reason, remedy) of the CONFLICT of an entry aikito does not own at one of its
    own temporary names — a relink's ``.NAME.aikito-relink`` ([L4]), where a relink of
    ``stands_for`` makes its fresh link: planned, so the dry run and the real run agree
    (the relink would stop at it, stale, every run)."""
    return (f"found {obs.describe()} at aikito's temporary relink name for {stands_for}; "
            "aikito makes a relink's fresh link under that name and never replaces what it "
            "does not own",
            f"rename or remove {quote(target)} (the name is aikito's own: "
            ".NAME.aikito-relink), then run again")


def anchor_finding(target: str, descriptor: str) -> Finding:
    """[P2]: the memory index a memory descriptor anchors in ``.agents/memory``, kept."""
    return Finding("memory.index_anchor", "info",
                   f"kept {target}: the memory index of this checkout's memory descriptor "
                   f"({descriptor} has a memory: block)", target)


def empty_directory_finding(target: str) -> Finding:
    """[P2]: an empty directory the plan's own unlinks did not empty, preserved."""
    return Finding("memory.empty_directory", "warning",
                   f"preserved empty directory {target}: aikito removes only directories "
                   "its own unlinks empty (an interrupted run can leave one behind) — rmdir "
                   "it yourself if it is not needed", target)
