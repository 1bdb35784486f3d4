"""Reading and checking the agent registry's files ([G3], [N1]): ``<ws>/agents/<a>.toml``
→ :class:`~aikito_mem.config.registry.AgentEntry` → one
:class:`~aikito_mem.config.registry.Registry`.

:func:`parse_agent_file` and :func:`build_registry` are pure; :func:`read_registry` reads
the listed files (:func:`aikito_mem.fsutil.read_regular`: regular files only, never
through a symlink); :func:`load_registry` lists ``agents/`` and reads it.  A run whose
``agents/`` is missing or holds no registry file never imports this module: the listing
decides its registry (:func:`aikito_mem.config.registry.listed_registry`, [§12]).
"""

from __future__ import annotations

import errno
from collections.abc import Iterable, Mapping, Sequence

from aikito_mem.config.registry import (
    SHARED_SKILLS,
    AgentEntry,
    Detect,
    InstructionTarget,
    Registry,
    agent_files,
    listed_registry,
)
from aikito_mem.config.registry import registry_error as _error
from aikito_mem.layout import AGENTS_DIR, agents_root

#: Instruction targets may not be, or be inside, these ([G3]).
_RESERVED = (AGENTS_DIR, ".git")
_KNOWN = ("project_instruction_path", "project_skills_path", "detect")
#: The characters of an agent name, and those it may start with ([G3]).
_NAME_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_NAME_CHARS = _NAME_FIRST | frozenset("._-")


def agent_name(name: str) -> bool:
    """Whether ``name`` (a registry file's stem) is an agent name ([G3]): lower-case ASCII
    letters, digits, ``.``, ``_``, ``-``, starting with a letter or digit."""
    return name[:1] in _NAME_FIRST and _NAME_CHARS.issuperset(name)


def _type_name(value: object) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a float",
             list: "an array", dict: "a table"}
    return names.get(type(value), f"a {type(value).__name__}")


def _clean_path(value: object, file: str, key: str) -> str:
    from aikito_mem.config.names import reference_problem

    if not isinstance(value, str):
        raise _error(file, key, f"is {_type_name(value)}; expected a string",
                     "write a relative path such as \"AGENTS.md\" or \".claude/CLAUDE.md\"")
    problem = reference_problem(value)
    if problem is not None:
        raise _error(file, key, f"{value!r} {problem}",
                     "write a clean relative path inside the checkout")
    return value


def _string_list(value: object, file: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _error(file, key, f"is {_type_name(value)}; expected an array of strings",
                     f"write {key.rpartition('.')[2]} = [\"...\"]")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            found = "an empty string" if item == "" else _type_name(item)
            raise _error(file, f"{key}[{index}]", f"is {found}; expected a non-empty string",
                         "fix or remove that element")
    return tuple(value)


def _parse_detect(value: object, file: str, agent: str) -> Detect:
    key = f"agents.{agent}.detect"
    if not isinstance(value, dict):
        raise _error(file, key, f"is {_type_name(value)}; expected a table",
                     f"write [agents.{agent}.detect] with commands = [...] and paths = [...]")
    commands = _string_list(value.get("commands", []), file, f"{key}.commands")
    for index, command in enumerate(commands):
        if "/" in command or command in (".", "..") or any(
            ord(ch) < 0x20 or ord(ch) == 0x7F for ch in command
        ):
            raise _error(file, f"{key}.commands[{index}]",
                         f"{command!r} is not a bare command name",
                         "write the name of an executable found on PATH, e.g. \"claude\"")
    paths = _string_list(value.get("paths", []), file, f"{key}.paths")
    for index, path in enumerate(paths):
        _clean_path(path, file, f"{key}.paths[{index}]")
    return Detect(commands, paths)


def parse_agent_file(name: str, data: bytes, file: str) -> AgentEntry:
    """One registry file's bytes → :class:`AgentEntry` ([G3]).  Pure."""
    from aikito_mem.config.agent_toml import toml_document

    if not agent_name(name):
        raise _error(file, "the file name", f"gives the agent name {name!r}, which is not valid",
                     "name registry files <agent>.toml with lower-case letters, digits, "
                     "'.', '_' or '-', starting with a letter or digit")
    doc = toml_document(data, file)
    for key in _KNOWN:
        if key in doc:
            raise _error(file, key, f"is written outside [agents.{name}]",
                         f"move it into the table [agents.{name}] (misplaced, it would "
                         "silently mean no target)")
    agents = doc.get("agents")
    if agents is None:
        return AgentEntry(name, file)
    if not isinstance(agents, dict):
        raise _error(file, "agents", f"is {_type_name(agents)}; expected a table",
                     f"write [agents.{name}]")
    for other in agents:
        if other != name:
            raise _error(file, f"agents.{other}",
                         f"is a table for agent {other!r} in the registry file of {name!r}",
                         f"move it to agents/{other}.toml (one agent per file)")
    table = agents.get(name)
    if table is None:
        return AgentEntry(name, file)
    if not isinstance(table, dict):
        raise _error(file, f"agents.{name}", f"is {_type_name(table)}; expected a table",
                     f"write [agents.{name}]")
    path: str | None = None
    if "project_instruction_path" in table:
        path = _clean_path(table["project_instruction_path"], file,
                           f"agents.{name}.project_instruction_path")
    detect = _parse_detect(table["detect"], file, name) if "detect" in table else None
    skills: str | None = None
    if "project_skills_path" in table:
        skills = _skills_path(table["project_skills_path"], file, name)
    return AgentEntry(name, file, path, detect, skills)


def _skills_path(value: object, file: str, agent: str) -> str:
    """``project_skills_path`` ([N1]): a clean relative directory inside the checkout;
    ``.agents/skills`` itself, or a path with no ``.git`` or ``.agents`` component."""
    key = f"agents.{agent}.project_skills_path"
    path = _clean_path(value, file, key)
    if path == SHARED_SKILLS:
        return path
    for part in path.split("/"):
        if part.casefold() in _RESERVED:
            raise _error(file, key, f"{path!r} has a {part} component",
                         f"choose a directory outside {part}/ (aikito owns .agents — "
                         f"{SHARED_SKILLS} itself is allowed; git owns .git)")
    return path


def _reserved(path: str) -> str | None:
    """The reserved name ([H4]: ``.agents``, ``.git``, in any letter case) that a
    component of ``path`` is, at any depth — ``vendor/lib/.git/hooks/post-checkout``
    would make the instructions a hook of a nested repository — else ``None``."""
    for component in path.split("/"):
        folded = component.casefold()
        for reserved in _RESERVED:
            if folded == reserved:
                return reserved
    return None


def build_registry(entries: Iterable[AgentEntry]) -> Registry:
    """Group agents by target path and check the targets ([G3]).  Pure."""
    agents = tuple(sorted(entries, key=lambda e: e.name))
    by_path: dict[str, list[AgentEntry]] = {}
    for entry in agents:
        if entry.instruction_path is None:
            continue
        reserved = _reserved(entry.instruction_path)
        if reserved is not None:
            raise _error(entry.file, f"agents.{entry.name}.project_instruction_path",
                         f"{entry.instruction_path!r} has a {reserved} component",
                         f"choose a path with no {reserved} component (aikito owns .agents; "
                         "git owns every .git, a nested repository's too)")
        by_path.setdefault(entry.instruction_path, []).append(entry)
    paths = sorted(by_path)
    for path in paths:
        for other in paths:
            if other != path and other.startswith(path + "/"):
                inner = by_path[other][0]
                raise _error(inner.file, f"agents.{inner.name}.project_instruction_path",
                             f"{other!r} is inside the instruction target {path!r} of "
                             f"agent {by_path[path][0].name!r}",
                             "choose paths that are not inside one another")
    targets = tuple(
        InstructionTarget(path, tuple(e.name for e in by_path[path])) for path in paths
    )
    return Registry(True, agents, targets, _skill_dirs(agents, by_path))


def _skill_dirs(agents: Sequence[AgentEntry], targets: Mapping[str, list[AgentEntry]]
                ) -> tuple[InstructionTarget, ...]:
    """The per-agent skills directories ([N1]), agents naming one directory grouped.  A
    directory equal to or inside an instruction target (or holding one), or inside another
    skills directory, is a configuration error naming the registry file: links of one
    would land among the entries of the other."""
    by_dir: dict[str, list[AgentEntry]] = {}
    for entry in agents:
        if entry.skills_path is not None and entry.skills_path != SHARED_SKILLS:
            by_dir.setdefault(entry.skills_path, []).append(entry)

    def nested(a: str, b: str) -> bool:
        return a == b or a.startswith(b + "/") or b.startswith(a + "/")

    dirs = sorted(by_dir)
    for path in dirs:
        owner = by_dir[path][0]
        key = f"agents.{owner.name}.project_skills_path"
        for target, users in targets.items():
            if nested(path, target):
                raise _error(owner.file, key,
                             f"{path!r} and the instruction target {target!r} of agent "
                             f"{users[0].name!r} are one inside the other",
                             "choose a skills directory apart from every instruction target")
        for other in dirs:
            if other != path and other.startswith(path + "/"):
                inner = by_dir[other][0]
                raise _error(inner.file, f"agents.{inner.name}.project_skills_path",
                             f"{other!r} is inside the skills directory {path!r} of agent "
                             f"{owner.name!r}", "choose directories apart from each other")
    return tuple(InstructionTarget(p, tuple(e.name for e in by_dir[p])) for p in dirs)


def read_registry(workspace: str, files: Iterable[str]) -> Registry:
    """Read and check the registry files ``files`` (names listed by
    :func:`~aikito_mem.config.registry.agent_files`) of ``<workspace>/agents`` ([G3]):
    every one must be a regular file."""
    from aikito_mem import fsutil

    directory = agents_root(workspace)
    entries: list[AgentEntry] = []
    for entry in files:
        file = f"{directory}/{entry}"
        try:
            data, _ = fsutil.read_regular(file, limit=1 << 20)
        except fsutil.NotRegularFileError as exc:
            raise _error(file, "the registry file",
                         f"is {fsutil.describe_mode(exc.st.st_mode)}; expected a regular file",
                         "replace it with a regular file or remove it") from None
        except OSError as exc:
            found = "a symlink" if exc.errno == errno.ELOOP else f"unreadable ({exc.strerror})"
            raise _error(file, "the registry file", f"is {found}; expected a regular file",
                         "replace it with a regular file (aikito never follows a symlinked "
                         "registry file) or remove it") from None
        entries.append(parse_agent_file(entry[: -len(".toml")], data, file))
    return build_registry(entries)


def load_registry(workspace: str) -> Registry:
    """Read ``<workspace>/agents`` ([G3]): every ``*.toml`` in it must be a regular file."""
    files = agent_files(workspace)
    listed = listed_registry(files)
    if listed is not None:
        return listed
    assert files is not None
    return read_registry(workspace, files)
