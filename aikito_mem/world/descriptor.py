"""A checkout's memory descriptor: ``.agents/config.yaml`` read by its reader rules.

Projects scaffolded with a memory descriptor record, in the checkout's
``.agents/config.yaml``, a top-level ``memory:`` block (``tier``, ``stack`` and the paths
the tier promises) and, in the ``project:`` block, ``project_init_contract_version``.
The tiers, and the paths each promises (a tier promises its own and every lower tier's):

- no ``memory:`` block (stack ``none``): no memory backend;
- 0 ``auto``: ``memory_path`` (``.agents/memory``, the anchor);
- 1 ``obsidian-only``: + ``vault_path`` (``.agents/vault``);
- 2 ``obsidian-graphify``: + ``graph_path`` (``graphify-out/graph.json``);
- 3 ``obsidian-graphify-rag``: + ``rag_endpoint`` (present, may be empty until wired).

Reader rules (feature-detect, never assume): no ``memory:`` block → no memory backend; no
``project.project_init_contract_version`` → contract v0; a missing ``rag_endpoint`` → no
RAG surface; a field of a higher tier is never required of a lower one.  Retrieval
degrades by tier: RAG when ``tier >= 3`` and ``rag_endpoint`` is set, the graph when
``tier >= 2``, else grep ``memory_path`` (``MEMORY.md`` first).

:func:`read_descriptor` never raises for what it finds: a missing file is
:attr:`DescriptorState.ABSENT`; a file that cannot be read (a symlink, a FIFO, a
directory, too big, no permission) or parsed (bad YAML, not a mapping) is
:attr:`DescriptorState.INVALID` with a finding; a field of the wrong type is a finding
and is read as absent.  YAML is parsed with PyYAML's safe loader only (the C one when
available), imported here and only when a file is actually parsed — so only ``status``
pays for it.  :func:`has_memory_block` is the sync's cheap check, without YAML.
"""

from __future__ import annotations

import errno
import os
import re
from enum import Enum
from typing import Any, TypeGuard

import attrs

from aikito_mem import fsutil
from aikito_mem.layout import AGENTS_DIR, DESCRIPTOR, DESCRIPTOR_NAME, MEMORY_DIR, VAULT_DIR
from aikito_mem.model import Finding
from aikito_mem.values import asdict

__all__ = [
    "CONFIG_NAME",
    "MAX_CONFIG_BYTES",
    "STACKS",
    "DescriptorState",
    "MemoryDescriptor",
    "has_memory_block",
    "read_descriptor",
]

#: The descriptor file, relative to the checkout root.
CONFIG_NAME = DESCRIPTOR
#: A larger ``config.yaml`` is not read (a scaffolded one is a few kilobytes).
MAX_CONFIG_BYTES = 1024 * 1024
#: ``stack`` → ``tier`` of the descriptor's tier table.
STACKS: dict[str, int] = {
    "auto": 0,
    "obsidian-only": 1,
    "obsidian-graphify": 2,
    "obsidian-graphify-rag": 3,
}
#: The highest tier this reader knows; higher ones are read by its rules (they only add).
KNOWN_TIER = 3
#: ``(field, lowest tier that promises it, resolved path of the tier table)``.
_PATHS: tuple[tuple[str, int, str | None], ...] = (
    ("memory_path", 0, MEMORY_DIR),
    ("vault_path", 1, VAULT_DIR),
    ("graph_path", 2, "graphify-out/graph.json"),
    ("rag_endpoint", 3, None),
)
#: A top-level ``memory:`` key at column 0 (plain or quoted), as YAML block style writes it.
_MEMORY_KEY = re.compile(rb"""^(?:memory|"memory"|'memory')[ \t]*:(?:[ \t]|\r?$)""", re.M)
_BOM = b"\xef\xbb\xbf"


class DescriptorState(Enum):
    #: No ``.agents/config.yaml`` in the checkout.
    ABSENT = "absent"
    #: ``config.yaml`` without a ``memory:`` block: no memory backend.
    NO_MEMORY = "no_memory"
    #: A ``memory:`` block was read.
    MEMORY = "memory"
    #: ``config.yaml`` could not be read or parsed, or ``memory:`` is not a mapping.
    INVALID = "invalid"


@attrs.frozen
class MemoryDescriptor:
    """What one checkout's ``.agents/config.yaml`` says about its memory."""

    checkout: str
    #: ``<checkout>/.agents/config.yaml``.
    path: str
    state: DescriptorState
    #: ``project.project_init_contract_version``; ``0`` when absent (v0); ``None`` when
    #: there is no readable ``config.yaml``.
    contract_version: int | None = None
    tier: int | None = None
    stack: str | None = None
    #: The paths the tier promises (the recorded value, else the tier table's), ``None``
    #: for the ones it does not promise.
    memory_path: str | None = None
    vault_path: str | None = None
    graph_path: str | None = None
    #: ``None``: no RAG surface; ``""``: promised but not wired yet.
    rag_endpoint: str | None = None
    findings: tuple[Finding, ...] = ()

    @property
    def has_backend(self) -> bool:
        return self.state is DescriptorState.MEMORY

    @property
    def surfaces(self) -> tuple[str, ...]:
        """Retrieval surfaces in the reader's order: ``rag``, ``graph``, ``grep``."""
        if self.tier is None:
            return ()
        out = []
        if self.tier >= 3 and self.rag_endpoint:
            out.append("rag")
        if self.tier >= 2:
            out.append("graph")
        out.append("grep")
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "state": self.state.value,
            "contract_version": self.contract_version,
            "tier": self.tier,
            "stack": self.stack,
            "memory_path": self.memory_path,
            "vault_path": self.vault_path,
            "graph_path": self.graph_path,
            "rag_endpoint": self.rag_endpoint,
            "surfaces": list(self.surfaces),
            "findings": [asdict(f) for f in self.findings],
        }


class _Unreadable(Exception):
    def __init__(self, why: str) -> None:
        self.why = why


def _read(checkout: str) -> bytes | None:
    """The bytes of ``.agents/config.yaml`` (``None`` when absent), read without following a
    symlink at ``.agents`` or at the file, without blocking, at most ``MAX_CONFIG_BYTES``."""
    try:
        root = fsutil.open_dir(checkout)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _Unreadable(f"the checkout cannot be opened ({exc.strerror})") from None
    try:
        try:
            agents = fsutil.open_subdir(root, AGENTS_DIR)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                found = fsutil.describe_mode(os.lstat(AGENTS_DIR, dir_fd=root).st_mode)
                raise _Unreadable(f"{AGENTS_DIR} is {found}, not a directory; not read") from None
            raise _Unreadable(f"{AGENTS_DIR} cannot be opened ({exc.strerror})") from None
        try:
            data, _ = fsutil.read_regular(DESCRIPTOR_NAME, dir_fd=agents, limit=MAX_CONFIG_BYTES)
            return data
        except FileNotFoundError:
            return None
        except fsutil.NotRegularFileError as exc:
            raise _Unreadable(f"it is {fsutil.describe_mode(exc.st.st_mode)}, not a regular "
                              "file; not read") from None
        except fsutil.FileTooLargeError as exc:
            raise _Unreadable(f"it is larger than {exc.limit} bytes; not read") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _Unreadable("it is a symlink; not followed") from None
            raise _Unreadable(f"it cannot be read ({exc.strerror})") from None
        finally:
            os.close(agents)
    finally:
        os.close(root)


def has_memory_block(checkout_root: str) -> bool:
    """Whether ``.agents/config.yaml`` has a top-level ``memory:`` key — without YAML.

    The cheap check of the sync (the ``MEMORY.md`` anchor rule): a line that starts, at
    column 0, with ``memory:`` (or the key quoted) followed by white space or the end of
    the line.  A file that is absent or cannot be read safely says ``False``.
    """
    try:
        data = _read(checkout_root)
    except (_Unreadable, OSError):
        return False
    return data is not None and _MEMORY_KEY.search(data.removeprefix(_BOM)) is not None


def _load_yaml(data: bytes) -> object:
    """Parse with PyYAML's safe loader (the C one when built); a failure is ``_Unreadable``."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(data, Loader=loader)  # a safe loader, never the full one
    except RecursionError:
        raise _Unreadable("not valid YAML (nested too deeply)") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        # ValueError: e.g. an impossible date such as 2024-02-30.
        first = str(exc).strip().splitlines()[:1] or [type(exc).__name__]
        raise _Unreadable(f"not valid YAML ({first[0]})") from None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _type(value: object) -> str:
    return "null" if value is None else type(value).__name__


def read_descriptor(checkout_root: str) -> MemoryDescriptor:
    """The memory descriptor of one checkout, by the reader rules; never raises."""
    path = os.path.join(checkout_root, CONFIG_NAME)
    findings: list[Finding] = []

    def note(code: str, message: str) -> None:
        findings.append(Finding(f"descriptor.{code}", "warning", f"{path}: {message}", path))

    def invalid(code: str, message: str) -> MemoryDescriptor:
        note(code, message)
        return MemoryDescriptor(checkout_root, path, DescriptorState.INVALID,
                                findings=tuple(findings))

    try:
        data = _read(checkout_root)
    except _Unreadable as exc:
        return invalid("unreadable", exc.why)
    except OSError as exc:
        return invalid("unreadable", f"it cannot be read ({exc.strerror})")
    if data is None:
        return MemoryDescriptor(checkout_root, path, DescriptorState.ABSENT)
    try:
        doc = _load_yaml(data)
    except _Unreadable as exc:
        return invalid("malformed", exc.why)
    if doc is None:
        doc = {}  # empty, or only comments
    if not isinstance(doc, dict):
        return invalid("not_mapping", f"expected a mapping at the top level, found {_type(doc)}")

    contract = _contract(doc.get("project"), note)
    if "memory" not in doc:
        return MemoryDescriptor(checkout_root, path, DescriptorState.NO_MEMORY, contract,
                                findings=tuple(findings))
    block = doc["memory"]
    if not isinstance(block, dict):
        return invalid("wrong_type", f"memory: expected a mapping (tier, stack, "
                       f"memory_path, …), found {_type(block)}")
    tier, stack = _tier(block, note)
    paths = _paths(block, tier, note)
    return MemoryDescriptor(
        checkout_root, path, DescriptorState.MEMORY, contract, tier, stack,
        paths["memory_path"], paths["vault_path"], paths["graph_path"],
        paths["rag_endpoint"], tuple(findings),
    )


def _contract(project: object, note: Any) -> int:
    """``project.project_init_contract_version``; anything else is read as contract v0."""
    if isinstance(project, dict):
        version = project.get("project_init_contract_version")
        if _is_int(version) and version >= 0:
            return version
        if version is not None:
            note("wrong_type", "project.project_init_contract_version: expected a "
                 f"non-negative integer, found {version!r}; read as contract v0")
    elif project is not None:
        note("wrong_type", f"project: expected a mapping, found {_type(project)}; read as "
             "contract v0")
    return 0


def _paths(block: dict[Any, Any], tier: int, note: Any) -> dict[str, str | None]:
    """The paths the tier promises (a higher tier's field is never required, nor
    reported); a field of the wrong type is read as its default."""
    paths: dict[str, str | None] = {}
    for field, lowest, default in _PATHS:
        if tier < lowest:
            paths[field] = None
            continue
        value = block.get(field, default)
        if field == "rag_endpoint" and value is None:
            paths[field] = None if field not in block else ""
        elif isinstance(value, str):
            paths[field] = value
        else:
            note("wrong_type", f"memory.{field}: expected a string, found {_type(value)}; "
                 f"read as {default!r}")
            paths[field] = default
    return paths


def _tier(block: dict[Any, Any], note: Any) -> tuple[int, str | None]:
    """``(tier, stack)`` of a ``memory:`` block; an unknown tier is read as tier 0."""
    raw_tier, raw_stack = block.get("tier"), block.get("stack")
    stack: str | None = None
    if isinstance(raw_stack, str):
        stack = raw_stack
    elif raw_stack is not None:
        note("wrong_type", f"memory.stack: expected a string, found {_type(raw_stack)}")
    from_stack = STACKS.get(stack) if stack is not None else None
    if _is_int(raw_tier) and raw_tier >= 0:
        tier: int = raw_tier
        if from_stack is not None and from_stack != tier:
            note("tier_mismatch", f"memory.tier is {tier} but stack {stack!r} means tier "
                 f"{from_stack}; read as tier {tier}")
        if tier > KNOWN_TIER:
            note("future_tier", f"memory.tier {tier} is newer than this reader (0–"
                 f"{KNOWN_TIER}); read by the rules of tier {KNOWN_TIER} and above")
        return tier, stack
    if raw_tier is not None:
        note("wrong_type", f"memory.tier: expected an integer from 0 to {KNOWN_TIER}, found "
             f"{raw_tier!r}")
    if from_stack is not None:
        note("no_tier", f"memory.tier is missing; read as tier {from_stack} from stack "
             f"{stack!r}")
        return from_stack, stack
    why = ("stack 'none' means no memory backend, yet a memory: block is there" if
           stack == "none" else "the stack is not one this reader knows")
    note("no_tier", f"memory.tier is missing and {why}; read as tier 0 (grep memory_path)")
    return 0, stack
