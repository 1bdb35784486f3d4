"""The catalogue of coding agents aikito knows ([N2]): ``agents.toml`` beside this module.

The catalogue is data shipped in the package: one table ``[agents.<name>]`` per agent, in
the registry format of [G3], each preceded by a comment block naming the agent's own
documentation for its paths.  :func:`parse_catalogue` is pure (bytes → entries, the
comment blocks kept as :attr:`CatalogueEntry.source`); :func:`load_catalogue` reads the
package's file once; :func:`registry_text` is the text of ``agents/<name>.toml`` that
``aikito init`` and ``aikito agents add`` write — only the table ``[agents.<name>]`` (the
reference tool refuses any other key in an agent file), headed by the entry's comments.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence

from attrs import frozen

from aikito_mem.config.registry import Detect
from aikito_mem.errors import ConfigError

__all__ = [
    "CATALOGUE_FILE",
    "CatalogueEntry",
    "detected_entries",
    "load_catalogue",
    "parse_catalogue",
    "registry_text",
    "suggestions",
    "toml_list",
]

#: The package resource holding the catalogue.
CATALOGUE_FILE = "agents.toml"
#: Registry names both tools accept: kebab case (the reference tool's rule for agent
#: files), which is also within [G3]'s stem rule.
CATALOGUE_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?\Z")
_HEADER = re.compile(r"\[agents\.([A-Za-z0-9_-]+)\]\s*\Z")


@frozen
class CatalogueEntry:
    """One agent of the catalogue."""

    name: str
    display_name: str
    #: ``project_instruction_path`` ([G3]), or ``None``: no plain link would be read.
    instruction_path: str | None
    #: ``project_skills_path`` ([N1]), or ``None``: the agent reads no project skills.
    skills_path: str | None
    detect: Detect
    #: The comment lines above the entry's table, ``#`` included: its sources.
    source: tuple[str, ...] = ()


def _problem(message: str) -> ConfigError:
    return ConfigError(f"the agent catalogue {CATALOGUE_FILE}: {message} — this is a bug "
                       "in aikito; please report it", code="config.catalogue")


def _comment_blocks(text: str) -> dict[str, tuple[str, ...]]:
    """Agent name → the comment lines right above its ``[agents.<name>]`` header."""
    blocks: dict[str, tuple[str, ...]] = {}
    pending: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped)
            continue
        match = _HEADER.match(stripped)
        if match is not None:
            blocks[match.group(1)] = tuple(pending)
        pending = []
    return blocks


def _entry(name: str, table: object, source: tuple[str, ...]) -> CatalogueEntry:
    from aikito_mem.config.registry_read import parse_agent_file

    if not isinstance(table, dict):
        raise _problem(f"agents.{name} is not a table")
    display = table.get("display_name")
    if not isinstance(display, str) or not display:
        raise _problem(f"agents.{name}.display_name is missing")
    skills = table.get("project_skills_path")
    if skills is not None and not isinstance(skills, str):
        raise _problem(f"agents.{name}.project_skills_path is not a string")
    # The engine's own reading of the file the entry becomes: the same checks as a sync.
    parsed = parse_agent_file(name, _table_text(name, table).encode("utf-8"),
                              f"{CATALOGUE_FILE}#{name}")
    if parsed.detect is None:
        raise _problem(f"agents.{name} has no detect table")
    return CatalogueEntry(name, display, parsed.instruction_path, skills, parsed.detect,
                          source)


def parse_catalogue(data: bytes) -> tuple[CatalogueEntry, ...]:
    """The catalogue's bytes → its entries, in file order.  Pure."""
    import tomllib

    text = data.decode("utf-8")
    doc = tomllib.loads(text)
    if set(doc) != {"agents"} or not isinstance(doc["agents"], dict):
        raise _problem("expected only [agents.<name>] tables")
    blocks = _comment_blocks(text)
    entries = []
    for name, table in doc["agents"].items():
        if CATALOGUE_NAME.match(name) is None:
            raise _problem(f"{name!r} is not a kebab-case agent name")
        entries.append(_entry(name, table, blocks.get(name, ())))
    return tuple(entries)


@functools.cache
def load_catalogue() -> tuple[CatalogueEntry, ...]:
    """The package's catalogue (read once per process)."""
    from importlib import resources

    data = resources.files("aikito_mem.config").joinpath(CATALOGUE_FILE).read_bytes()
    return parse_catalogue(data)


def toml_list(values: Iterable[str]) -> str:
    """A one-line TOML array of basic strings."""
    from aikito_mem.config.edit import toml_basic_string

    return "[" + ", ".join(toml_basic_string(v) for v in values) + "]"


def _table_text(name: str, table: dict[str, object]) -> str:
    from aikito_mem.config.edit import toml_basic_string

    lines = [f"[agents.{name}]"]
    for key in ("display_name", "project_instruction_path", "project_skills_path"):
        value = table.get(key)
        if isinstance(value, str):
            lines.append(f"{key} = {toml_basic_string(value)}")
    detect = table.get("detect")
    if isinstance(detect, dict):
        lines += ["", f"[agents.{name}.detect]"]
        for key in ("commands", "paths"):
            value = detect.get(key, [])
            if isinstance(value, list):
                lines.append(f"{key} = {toml_list(str(v) for v in value)}")
    return "\n".join(lines) + "\n"


def registry_text(entry: CatalogueEntry) -> str:
    """The text of ``agents/<entry.name>.toml``: a comment header, then the one table."""
    table: dict[str, object] = {
        "display_name": entry.display_name,
        "project_instruction_path": entry.instruction_path,
        "project_skills_path": entry.skills_path,
        "detect": {"commands": list(entry.detect.commands),
                   "paths": list(entry.detect.paths)},
    }
    header = [
        f"# {entry.display_name}, from aikito's agent catalogue.",
        "# project_instruction_path: where `aikito sync project` links the project's",
        "# instructions (projects/<name>/AGENTS.md) in each checkout; project_skills_path:",
        "# where it also links the project's skills.  A directory that is missing is",
        "# created only where the agent is detected (a command on PATH, or a path under",
        "# your home).  Delete this file if you do not use this agent.",
        "#",
        *entry.source,
    ]
    return "\n".join(header) + "\n" + _table_text(entry.name, table)


def detected_entries(environ: Mapping[str, str], home: str | None
                     ) -> tuple[CatalogueEntry, ...]:
    """The catalogue agents detected with this environment ([G4]'s rule: a command on
    ``PATH``, a path under the home directory)."""
    from aikito_mem.config.registry import detected

    return tuple(e for e in load_catalogue() if detected(e.detect, environ, home))


def suggestions(name: str, names: Sequence[str]) -> tuple[str, ...]:
    """Catalogue names close to ``name`` (a did-you-mean): names it starts, ends or is a
    part of, then the close spellings."""
    import difflib

    wanted = name.casefold()
    contained = [n for n in names
                 if wanted and (wanted in n or (len(n) > 2 and n in wanted))]
    close = difflib.get_close_matches(wanted, names, n=3, cutoff=0.6)
    ordered = dict.fromkeys([*contained, *close])
    return tuple(ordered)[:3]
