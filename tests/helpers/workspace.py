"""The one temporary-workspace builder, :class:`WS` (fixture ``ws`` in conftest)::

    from tests.helpers.workspace import WS

    def test_something(ws: WS) -> None:
        ws.add_file("team/a.md", "hello")
        ws.write_config("demo", memory=["team/a.md"], paths=[ws.checkout("co")])
        plan = ws.project("demo").plan()

Every path :class:`WS` returns is an absolute, physical ``str`` (the workspace root is
``realpath``-ed once, as [W1] requires of the engine), so it can be compared directly with
the paths in a :class:`~aikito_mem.model.Plan`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import tomli_w

if TYPE_CHECKING:
    from aikito_mem import Project


def config_text(memory: Sequence[str] | None, paths: Sequence[object] | None) -> str:
    """An ``agent.toml`` of one ``memory`` line and one ``paths`` line (each left out when
    ``None``; paths as ``str``), written as a person would."""
    text = ""
    if memory is not None:
        text += f"memory = {json.dumps(list(memory))}\n"
    if paths is not None:
        text += f"paths = {json.dumps([str(p) for p in paths])}\n"
    return text


class WS:
    """A temporary workspace (``<base>/ws``) plus a place for checkouts (``<base>/co``).

    ``root`` is the physical workspace root; ``projects/`` and ``memory/`` exist from the
    start.  Methods return absolute ``str`` paths.
    """

    def __init__(self, base: Path | str) -> None:
        base = Path(os.path.realpath(base))
        self.base = base
        self.root = str(base / "ws")
        self.checkouts_dir = str(base / "co")
        os.makedirs(f"{self.root}/projects", exist_ok=True)
        os.makedirs(f"{self.root}/memory", exist_ok=True)
        os.makedirs(self.checkouts_dir, exist_ok=True)

    # -- workspace memory ---------------------------------------------------------------

    def memory_path(self, ref: str) -> str:
        """``<ws>/memory/<ref>``: the canonical source of ``ref`` ([S1])."""
        return f"{self.root}/memory/{ref}"

    def add_file(self, ref: str, content: str = "") -> str:
        """Create the regular file ``<ws>/memory/<ref>`` (parents as needed)."""
        path = self.memory_path(ref)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_text(content, encoding="utf-8")
        return path

    def add_dir(self, ref: str) -> str:
        """Create the directory ``<ws>/memory/<ref>`` (parents as needed)."""
        path = self.memory_path(ref)
        os.makedirs(path, exist_ok=True)
        return path

    # -- projects -----------------------------------------------------------------------

    def config_path(self, project: str) -> str:
        return f"{self.root}/projects/{project}/agent.toml"

    def write_config(
        self,
        project: str,
        memory: Sequence[str] | None = None,
        paths: Sequence[str] | Mapping[str, str] | None = None,
        raw: str | bytes | None = None,
        skills: Sequence[str] | None = None,
    ) -> str:
        """Write ``projects/<project>/agent.toml`` and return its path.

        With ``raw`` the exact text/bytes are written; otherwise a TOML document with
        ``memory``, ``paths`` (a list or a label → path table) and ``skills``, each omitted
        when ``None``.
        """
        path = self.config_path(project)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if raw is None:
            doc: dict[str, object] = {}
            if memory is not None:
                doc["memory"] = list(memory)
            if paths is not None:
                doc["paths"] = dict(paths) if isinstance(paths, Mapping) else list(paths)
            if skills is not None:
                doc["skills"] = list(skills)
            raw = tomli_w.dumps(doc)
        data = raw.encode("utf-8") if isinstance(raw, str) else raw
        Path(path).write_bytes(data)
        return path

    def notes_path(self, project: str, legacy: bool = False) -> str:
        """The current (``projects/<p>/memory/notes``) or legacy (``memory/<p>/notes``)
        notes location ([S2])."""
        if legacy:
            return f"{self.root}/memory/{project}/notes"
        return f"{self.root}/projects/{project}/memory/notes"

    def add_notes(self, project: str, legacy: bool = False) -> str:
        """Create the project's notes directory (current or legacy) with one note in it."""
        path = self.notes_path(project, legacy)
        os.makedirs(path, exist_ok=True)
        Path(path, "note.md").write_text("a note\n", encoding="utf-8")
        return path

    # -- skills and instructions (§13) -------------------------------------------------

    def add_skill(self, name: str, content: str | None = None) -> str:
        """Create the skill ``<ws>/skills/<name>/`` holding ``SKILL.md`` (``# <name>`` unless
        ``content`` says otherwise)."""
        path = f"{self.root}/skills/{name}"
        os.makedirs(path, exist_ok=True)
        text = f"# {name}\n" if content is None else content
        Path(path, "SKILL.md").write_text(text, encoding="utf-8")
        return path

    def add_agent(self, agent: str, text: str) -> str:
        """Write the registry file ``<ws>/agents/<agent>.toml`` ([G3]) with ``text``."""
        os.makedirs(f"{self.root}/agents", exist_ok=True)
        path = f"{self.root}/agents/{agent}.toml"
        Path(path).write_text(text, encoding="utf-8")
        return path

    def write_instructions(self, project: str, text: str) -> str:
        """Write the project's instructions ``projects/<project>/AGENTS.md`` ([G3])."""
        path = f"{self.root}/projects/{project}/AGENTS.md"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
        return path

    # -- checkouts ----------------------------------------------------------------------

    def checkout(self, name: str) -> str:
        """Create (if needed) the checkout directory ``<base>/co/<name>``; return its path."""
        path = f"{self.checkouts_dir}/{name}"
        os.makedirs(path, exist_ok=True)
        return path

    def runtime(self, checkout: str, rel: str = "") -> str:
        """``<checkout>/.agents/memory[/<rel>]``."""
        base = f"{checkout}/.agents/memory"
        return f"{base}/{rel}" if rel else base

    # -- what a test watches -------------------------------------------------------------

    @property
    def home(self) -> str:
        """This test's home: the guarded ``HOME`` (conftest)."""
        return os.environ["HOME"]

    def roots(self) -> list[str]:
        """Everything a "nothing else changed" test snapshots: the base directory (the
        workspace, the checkouts and whatever the test put beside them) and the home."""
        return [str(self.base), self.home]

    def project(self, name: str) -> Project:
        """``Project.load(name, workspace=root)`` with the current (guarded) environment."""
        from aikito_mem import Project

        return Project.load(name, workspace=self.root)


def bare_workspace(path: Path) -> Path:
    """A workspace at exactly ``path`` (parents made) holding only ``projects/``, the least
    [W2] accepts: for discovery tests, where the place is the point."""
    (path / "projects").mkdir(parents=True)
    return path
