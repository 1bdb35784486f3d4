"""The memory descriptor of a checkout (``.agents/config.yaml``), read by its reader rules:
never an exception, a finding for whatever is malformed or unreadable."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from aikito_mem.world.descriptor import (
    MAX_CONFIG_BYTES,
    DescriptorState,
    has_memory_block,
    read_descriptor,
)
from tests.helpers.snapshots import snapshot
from tests.helpers.strategies import fs_examples

#: The reference example of the descriptor contract (tier 3).
FULL = """\
project:
  project_init_contract_version: 1         # absent => v0
memory:
  tier: 3                                  # 0 auto | 1 obsidian-only | 2 … | 3 …
  stack: obsidian-graphify-rag
  memory_path: .agents/memory              # anchor
  vault_path: .agents/vault                # tier >= 1
  graph_path: graphify-out/graph.json      # tier >= 2
  rag_endpoint:                            # tier 3; empty until wired
"""


def checkout_with(tmp_path: Path, text: str | bytes | None) -> str:
    co = tmp_path / "co"
    (co / ".agents").mkdir(parents=True, exist_ok=True)
    if text is not None:
        data = text.encode("utf-8") if isinstance(text, str) else text
        (co / ".agents" / "config.yaml").write_bytes(data)
    return str(co)


def codes(descriptor) -> list[str]:  # type: ignore[no-untyped-def]
    return [f.code for f in descriptor.findings]


# -- states -----------------------------------------------------------------------------


def test_no_config_file(tmp_path: Path) -> None:
    for co in (str(tmp_path / "missing"), str(tmp_path)):
        d = read_descriptor(co)
        assert d.state is DescriptorState.ABSENT and d.contract_version is None
        assert d.findings == () and not d.has_backend
    d = read_descriptor(checkout_with(tmp_path, None))
    assert d.state is DescriptorState.ABSENT


def test_no_memory_block_means_no_memory_backend(tmp_path: Path) -> None:
    d = read_descriptor(checkout_with(tmp_path, "project:\n  project_init_contract_version: 1\n"))
    assert d.state is DescriptorState.NO_MEMORY and not d.has_backend
    assert d.contract_version == 1
    assert (d.tier, d.stack, d.memory_path, d.surfaces) == (None, None, None, ())
    assert d.findings == ()


def test_the_reference_example(tmp_path: Path) -> None:
    co = checkout_with(tmp_path, FULL)
    d = read_descriptor(co)
    assert d.state is DescriptorState.MEMORY and d.has_backend
    assert (d.contract_version, d.tier, d.stack) == (1, 3, "obsidian-graphify-rag")
    assert (d.memory_path, d.vault_path, d.graph_path) == (
        ".agents/memory", ".agents/vault", "graphify-out/graph.json")
    assert d.rag_endpoint == ""  # promised, not wired: no RAG surface yet
    assert d.surfaces == ("graph", "grep")
    assert d.findings == ()
    assert d.path == f"{co}/.agents/config.yaml" and d.checkout == co


TIERS = {
    0: ("auto", {"memory_path": ".agents/memory"}),
    1: ("obsidian-only", {"memory_path": ".agents/memory", "vault_path": ".agents/vault"}),
    2: ("obsidian-graphify", {"memory_path": ".agents/memory", "vault_path": ".agents/vault",
                              "graph_path": "graphify-out/graph.json"}),
    3: ("obsidian-graphify-rag", {"memory_path": ".agents/memory",
                                  "vault_path": ".agents/vault",
                                  "graph_path": "graphify-out/graph.json",
                                  "rag_endpoint": "http://localhost:8000/rag"}),
}


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_each_tier_reports_the_paths_it_promises(tmp_path: Path, tier: int) -> None:
    stack, paths = TIERS[tier]
    block = {"tier": tier, "stack": stack, **paths}
    d = read_descriptor(checkout_with(tmp_path, yaml.safe_dump(
        {"project": {"project_init_contract_version": 1}, "memory": block})))
    assert (d.state, d.tier, d.stack, d.findings) == (DescriptorState.MEMORY, tier, stack, ())
    got = {k: getattr(d, k) for k in ("memory_path", "vault_path", "graph_path",
                                      "rag_endpoint")}
    assert got == {k: paths.get(k) for k in got}
    assert d.surfaces == {0: ("grep",), 1: ("grep",), 2: ("graph", "grep"),
                          3: ("rag", "graph", "grep")}[tier]


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_a_lower_tier_is_never_asked_for_a_higher_tiers_field(
    tmp_path: Path, tier: int
) -> None:
    """Only ``tier`` written: every promised path comes from the tier table, no finding,
    and no higher tier's field is required or reported."""
    d = read_descriptor(checkout_with(tmp_path, f"memory:\n  tier: {tier}\n"))
    assert d.findings == ()
    assert d.memory_path == ".agents/memory"
    assert d.vault_path == (".agents/vault" if tier >= 1 else None)
    assert d.graph_path == ("graphify-out/graph.json" if tier >= 2 else None)
    assert d.rag_endpoint is None  # missing rag_endpoint: no RAG surface


def test_fields_beyond_the_tier_are_not_reported(tmp_path: Path) -> None:
    d = read_descriptor(checkout_with(tmp_path, "memory:\n  tier: 1\n  graph_path: g.json\n"
                                                "  rag_endpoint: http://x\n"))
    assert (d.graph_path, d.rag_endpoint, d.surfaces) == (None, None, ("grep",))


@pytest.mark.parametrize(
    "text",
    [FULL.replace("  project_init_contract_version: 1         # absent => v0\n", ""),
     "project:\n  name: demo\nmemory:\n  tier: 0\n",
     "memory:\n  tier: 0\n"],
)
def test_missing_contract_version_is_v0(tmp_path: Path, text: str) -> None:
    d = read_descriptor(checkout_with(tmp_path, text))
    assert d.state is DescriptorState.MEMORY
    assert d.contract_version == 0


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n"])
def test_an_empty_file_has_no_memory_block(tmp_path: Path, text: str) -> None:
    d = read_descriptor(checkout_with(tmp_path, text))
    assert (d.state, d.contract_version, d.findings) == (DescriptorState.NO_MEMORY, 0, ())


# -- tier and stack ---------------------------------------------------------------------


def test_tier_and_stack_that_disagree(tmp_path: Path) -> None:
    d = read_descriptor(checkout_with(tmp_path, "memory:\n  tier: 2\n  stack: obsidian-only\n"))
    assert d.tier == 2 and codes(d) == ["descriptor.tier_mismatch"]


def test_tier_missing_is_read_from_the_stack(tmp_path: Path) -> None:
    d = read_descriptor(checkout_with(tmp_path, "memory:\n  stack: obsidian-graphify\n"))
    assert d.tier == 2 and d.graph_path == "graphify-out/graph.json"
    assert codes(d) == ["descriptor.no_tier"]


@pytest.mark.parametrize("stack", ["", "stack: custom\n", "stack: none\n"])
def test_tier_unknown_is_read_as_tier_0(tmp_path: Path, stack: str) -> None:
    d = read_descriptor(checkout_with(tmp_path, f"memory:\n  memory_path: m\n  {stack}"))
    assert (d.tier, d.memory_path, d.vault_path) == (0, "m", None)
    assert codes(d) == ["descriptor.no_tier"]


def test_a_future_tier_is_read_by_the_highest_known_rules(tmp_path: Path) -> None:
    d = read_descriptor(checkout_with(tmp_path, "memory:\n  tier: 5\n  rag_endpoint: http://r\n"))
    assert d.tier == 5 and d.surfaces == ("rag", "graph", "grep")
    assert codes(d) == ["descriptor.future_tier"]


# -- wrong types ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("memory:\n  tier: '3'\n", {"tier": 0}),
        ("memory:\n  tier: true\n", {"tier": 0}),
        ("memory:\n  tier: -1\n", {"tier": 0}),
        ("memory:\n  tier: 2.0\n", {"tier": 0}),
        ("memory:\n  tier: 1\n  stack: [a]\n", {"tier": 1, "stack": None}),
        ("memory:\n  tier: 1\n  memory_path: 5\n", {"memory_path": ".agents/memory"}),
        ("memory:\n  tier: 2\n  graph_path: {a: 1}\n", {"graph_path": "graphify-out/graph.json"}),
        ("memory:\n  tier: 3\n  rag_endpoint: [x]\n", {"rag_endpoint": None}),
        ("project:\n  project_init_contract_version: '1'\nmemory: {tier: 0}\n",
         {"contract_version": 0}),
        ("project:\n  project_init_contract_version: false\n", {"contract_version": 0}),
        ("project: [1]\nmemory: {tier: 0}\n", {"contract_version": 0}),
    ],
)
def test_a_field_of_the_wrong_type_is_a_finding_and_read_as_absent(
    tmp_path: Path, text: str, expect: dict[str, object]
) -> None:
    d = read_descriptor(checkout_with(tmp_path, text))
    assert d.state is not DescriptorState.INVALID
    assert "descriptor.wrong_type" in codes(d)
    assert {k: getattr(d, k) for k in expect} == expect


@pytest.mark.parametrize("value", ["[a, b]", "text", "", "3"])
def test_a_memory_block_that_is_not_a_mapping_is_invalid(tmp_path: Path, value: str) -> None:
    d = read_descriptor(checkout_with(tmp_path, f"memory: {value}\n"))
    assert d.state is DescriptorState.INVALID and codes(d) == ["descriptor.wrong_type"]
    assert "memory: expected a mapping" in d.findings[0].message


@pytest.mark.parametrize("text", ["- memory\n- tier\n", "just text\n", "42\n"])
def test_a_top_level_that_is_not_a_mapping_is_invalid(tmp_path: Path, text: str) -> None:
    d = read_descriptor(checkout_with(tmp_path, text))
    assert d.state is DescriptorState.INVALID and codes(d) == ["descriptor.not_mapping"]


# -- malformed and unreadable files ------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"memory:\n  tier: [1\n",  # unclosed flow sequence
        b"memory: {tier: 1\n",
        b"a: b\n  c: d\n",  # bad indentation
        b"a: 1\n---\nb: 2\n",  # two documents
        b"when: 2024-02-30\n",  # an impossible date
        b"memory:\n  tier: \xff\xfe\n",  # not UTF-8
        b"x: " + b"[" * 20000 + b"]" * 20000 + b"\n",  # nested too deeply
        b"!!python/object/apply:os.system ['touch pwned']\n",  # never constructed
        b"x: \x00\n",
    ],
)
def test_malformed_yaml_is_a_finding(tmp_path: Path, data: bytes, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    d = read_descriptor(checkout_with(tmp_path, data))
    assert d.state is DescriptorState.INVALID and codes(d) == ["descriptor.malformed"]
    assert d.findings[0].severity == "warning"
    assert d.findings[0].message.startswith(f"{d.path}: not valid YAML (")
    assert "\n" not in d.findings[0].message
    assert not (tmp_path / "pwned").exists()


def test_aliases_are_not_expanded(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    d = read_descriptor(checkout_with(tmp_path, "\n".join(lines) + "\nmemory: {tier: 0}\n"))
    assert d.state is DescriptorState.MEMORY and d.tier == 0


def _fifo(path: Path) -> None:
    os.mkfifo(path)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: os.symlink("real.yaml", p), "symlink"),
        (_fifo, "FIFO"),
        (lambda p: p.mkdir(), "directory"),
        (lambda p: p.write_bytes(b"#" * (MAX_CONFIG_BYTES + 1)), "larger than"),
    ],
)
def test_an_unreadable_config_is_a_finding(tmp_path: Path, make, why: str) -> None:  # type: ignore[no-untyped-def]
    co = checkout_with(tmp_path, None)
    Path(co, ".agents", "real.yaml").write_text(FULL)
    make(Path(co, ".agents", "config.yaml"))
    result: list[object] = []
    reader = threading.Thread(target=lambda: result.append(read_descriptor(co)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert result, "read_descriptor blocked"
    d = result[0]
    assert d.state is DescriptorState.INVALID and codes(d) == ["descriptor.unreadable"]
    assert why in d.findings[0].message


@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_agents_that_is_not_a_directory_is_a_finding(tmp_path: Path, kind: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.yaml").write_text(FULL)
    co = tmp_path / "co"
    co.mkdir()
    if kind == "symlink":
        os.symlink(str(elsewhere), co / ".agents")
    else:
        (co / ".agents").write_text("x")
    d = read_descriptor(str(co))
    assert d.state is DescriptorState.INVALID and codes(d) == ["descriptor.unreadable"]
    assert ".agents is a" in d.findings[0].message
    assert not has_memory_block(str(co))


def test_reading_writes_nothing(tmp_path: Path) -> None:
    co = checkout_with(tmp_path, FULL)
    before = snapshot(tmp_path)
    read_descriptor(co)
    has_memory_block(co)
    assert snapshot(tmp_path) == before


def test_json_document(tmp_path: Path) -> None:
    doc = read_descriptor(checkout_with(tmp_path, FULL)).to_json()
    assert doc["state"] == "memory" and doc["tier"] == 3 and doc["contract_version"] == 1
    assert doc["surfaces"] == ["graph", "grep"] and doc["findings"] == []
    bad = read_descriptor(checkout_with(tmp_path, "memory: [\n")).to_json()
    assert bad["state"] == "invalid"
    assert bad["findings"][0]["code"] == "descriptor.malformed"


# -- has_memory_block: the cheap check, without YAML --------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (FULL, True),
        ("memory:\n  tier: 0\n", True),
        ("memory: # on\n  tier: 0\n", True),
        ("memory:\r\n  tier: 0\r\n", True),
        ("memory:", True),
        ('"memory":\n  tier: 0\n', True),
        ("\ufeffmemory:\n  tier: 0\n", True),
        ("memory : {tier: 0}\n", True),
        ("project:\n  memory: x\n", False),
        ("  memory:\n", False),
        ("# memory:\n", False),
        ("memory_x:\n  tier: 0\n", False),
        ("memorymemory: 1\n", False),
        ("memory:x\n", False),
        ("", False),
    ],
)
def test_has_memory_block(tmp_path: Path, text: str, expected: bool) -> None:
    assert has_memory_block(checkout_with(tmp_path, text)) is expected


def test_has_memory_block_without_a_file(tmp_path: Path) -> None:
    assert has_memory_block(str(tmp_path)) is False
    assert has_memory_block(str(tmp_path / "missing")) is False
    co = checkout_with(tmp_path, None)
    os.mkfifo(Path(co, ".agents", "config.yaml"))
    assert has_memory_block(co) is False


_KEYS = st.sampled_from(["memory", "memory_x", "xmemory", "Memory", "project", "tier", "a"])
_TEXT = st.text(alphabet=st.sampled_from(list("memory:# \n'\"-ab")), max_size=12)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=fs_examples(40))
@given(doc=st.dictionaries(_KEYS, _VALUES, max_size=4), flow=st.booleans())
def test_the_cheap_check_agrees_with_the_parser(
    tmp_path_factory: pytest.TempPathFactory, doc: dict[str, object], flow: bool
) -> None:
    """For a block-style top level (what scaffolders write; nested values may be in flow
    style), the column-0 check sees ``memory:`` exactly when the parser finds the key,
    whatever the nested keys and strings hold."""
    # PyYAML writes a collection in flow style when all its items are scalars: keep the
    # top level in block style by asking for flow only when one value is a collection.
    nested = flow and any(isinstance(v, list | dict) for v in doc.values())
    text = yaml.safe_dump(doc, default_flow_style=None if nested else False, sort_keys=False,
                          allow_unicode=True)
    co = checkout_with(tmp_path_factory.mktemp("d"), text)
    assert has_memory_block(co) is ("memory" in doc)
    state = read_descriptor(co).state
    assert (state in (DescriptorState.MEMORY, DescriptorState.INVALID)) is ("memory" in doc)


def test_yaml_is_imported_only_to_parse() -> None:
    """A sync may call :func:`has_memory_block`; only ``status`` (which parses) pays for YAML."""
    code = textwrap.dedent(
        """
        import sys, tempfile, os
        from aikito_mem.world.descriptor import has_memory_block, read_descriptor
        d = tempfile.mkdtemp()
        os.makedirs(d + "/.agents")
        open(d + "/.agents/config.yaml", "w").write("memory:\\n  tier: 0\\n")
        assert has_memory_block(d)
        assert "yaml" not in sys.modules, "has_memory_block imported yaml"
        read_descriptor(tempfile.mkdtemp())  # no file: nothing to parse
        assert "yaml" not in sys.modules, "read_descriptor imported yaml without a file"
        read_descriptor(d)
        assert "yaml" in sys.modules
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("loader", ["C", "pure Python"])
def test_deep_nesting_with_either_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: str
) -> None:
    if loader == "pure Python":
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML was built without libyaml")
    d = read_descriptor(checkout_with(tmp_path, b"x: " + b"[" * 5000 + b"]" * 5000 + b"\n"))
    assert d.state is DescriptorState.INVALID and codes(d) == ["descriptor.malformed"]
