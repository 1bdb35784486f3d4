"""Saved plans: exact round trip, and refusal of every damaged file (SPEC §9 ``--out``)."""

from __future__ import annotations

import os
import random
import tomllib
from pathlib import Path

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from aikito_mem.errors import ConfigError, PlanFileError
from aikito_mem.executor.planfile import PLAN_SCHEMA, dump_plan, load_plan, read_plan, write_plan
from aikito_mem.model import (
    ABSENT,
    Action,
    Candidate,
    CheckoutPlan,
    CheckoutState,
    Finding,
    Kind,
    Observed,
    Operation,
    Plan,
    SourceCheck,
)

WS = "/abs/ws"
CO = "/abs/co"


def make_plan(**changes: object) -> Plan:
    """A hand-built plan with every action, an offline checkout, notes and None fields."""
    src_dir = Observed(Kind.DIR, dev=2049, ino=131073, gen=2**32 - 1)
    src_file = Observed(Kind.FILE, dev=2**40 + 7, ino=2**62, gen=None)
    link = Observed(Kind.LINK, literal=f"{WS}/memory/glossary", dev=2049, ino=77, gen=0)
    ops = (
        Operation(
            action=Action.CREATE,
            rule="INV-MEM-01",
            checkout=CO,
            target=f"{CO}/.agents/memory/team/a.md",
            reason="target missing",
            resource="team/a.md",
            source=f"{WS}/memory/team/a.md",
        ),
        Operation(
            action=Action.NOOP,
            rule="INV-MEM-10",
            checkout=CO,
            target=f"{CO}/.agents/memory/glossary",
            reason="already linked",
            resource="glossary",
            source=f"{WS}/memory/glossary",
            observed=link,
        ),
        Operation(
            action=Action.UNLINK,
            rule="INV-MEM-06",
            checkout=CO,
            target=f"{CO}/.agents/memory/old",
            reason="stale owned link",
            observed=Observed(Kind.LINK, literal=f"{WS}/memory/old", dev=1, ino=2),
        ),
        Operation(
            action=Action.UNLINK,
            rule="INV-MEM-06",
            checkout=CO,
            target=f"{CO}/.agents/memory/olddir",
            reason="empty after unlinks",
            entry="directory",
            observed=Observed(Kind.DIR, dev=1, ino=3),
        ),
        Operation(
            action=Action.CONFLICT,
            rule="INV-MEM-07",
            checkout=CO,
            target=f"{CO}/.agents/memory/notes",
            reason="a regular file is in the way",
            resource="notes",
            source=f"{WS}/projects/demo/memory/notes",
            remedy="move the file away and run the sync again",
            observed=Observed(Kind.FILE, dev=1, ino=4),
        ),
        Operation(
            action=Action.SKIP,
            rule="INV-MEM-08",
            checkout="/srv/démo 'offline' \"x\"\\y",
            target="/srv/démo 'offline' \"x\"\\y/.agents/memory/glossary",
            reason="checkout offline",
            resource="glossary",
            source=f"{WS}/memory/glossary",
        ),
    )
    plan = Plan(
        project="demo",
        workspace=WS,
        workspace_source="AIKITO_DIR",
        config_path=f"{WS}/projects/demo/agent.toml",
        memory=("team/a.md", "glossary", "日本語/メモ.md"),
        candidates=(
            Candidate(label="laptop", raw="~/co", path=CO, absolute=True),
            Candidate(label="2", raw="D:/code/x", path="D:/code/x", absolute=False),
        ),
        project_memory_exists=True,
        notes_source=f"{WS}/projects/demo/memory/notes",
        notes_location="current",
        sources=(
            SourceCheck(path=f"{WS}/memory/team/a.md", observed=src_file, identity=True),
            SourceCheck(path=f"{WS}/memory/team", observed=src_dir),
            SourceCheck(path=f"{WS}/memory/glossary", observed=Observed(Kind.FILE)),
        ),
        checkouts=(
            CheckoutPlan(
                label="laptop",
                path=CO,
                state=CheckoutState.ACTIVE,
                dirs=(
                    ("", Observed(Kind.DIR, dev=1, ino=10, gen=5)),
                    (".agents", Observed(Kind.DIR, dev=1, ino=11)),
                    (".agents/memory", Observed(Kind.DIR, dev=1, ino=12)),
                    (".agents/memory/team", ABSENT),
                ),
            ),
            CheckoutPlan(
                label="2",
                path="D:/code/x",
                state=CheckoutState.OFFLINE,
                reason="not an absolute path on this system",
            ),
        ),
        operations=ops,
        findings=(
            Finding(code="memory.foreign_entry", severity="warning", message="…", path=CO),
            Finding(code="config.did_you_mean", severity="warning", message="memroy?"),
        ),
    )
    return plan.evolve(**changes) if changes else plan


def test_round_trip_is_exact() -> None:
    plan = make_plan()
    data = dump_plan(plan)
    assert load_plan(data, path="p.toml") == plan


def test_round_trip_with_registration_fields() -> None:
    plan = make_plan(
        explicit_path=CO, register=CO, config_sha256="ab" * 32, notes_source=None,
        notes_location=None, project_memory_exists=False,
    )
    assert load_plan(dump_plan(plan), path="p.toml") == plan


def test_round_trip_empty_collections() -> None:
    plan = make_plan(memory=(), candidates=(), sources=(), checkouts=(), operations=(),
                     findings=())
    assert load_plan(dump_plan(plan), path="p.toml") == plan


def test_dump_is_deterministic_and_versioned() -> None:
    data = dump_plan(make_plan())
    assert data == dump_plan(make_plan())
    document = tomllib.loads(data.decode())
    assert document["schema"] == PLAN_SCHEMA == "aikito.plan/1"
    assert document["checksum"].startswith("sha256:")
    # None is written by omission, enums by value, dirs pairs as named tables.
    assert "explicit_path" not in document["plan"]
    assert document["plan"]["operations"][0]["action"] == "CREATE"
    assert document["plan"]["checkouts"][0]["dirs"][1] == {
        "rel": ".agents", "observed": {"kind": "directory", "dev": 1, "ino": 11}
    }
    assert "gen" not in document["plan"]["sources"][0]["observed"]


def test_non_utf8_path_round_trips() -> None:
    odd = os.fsdecode(b"/abs/co-\xff\xfe")
    plan = make_plan(explicit_path=odd)
    assert load_plan(dump_plan(plan), path="p.toml") == plan


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(),
    number=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    gen=st.none() | st.integers(min_value=0, max_value=2**32),
)
def test_round_trip_any_unicode_and_ints(text: str, number: int, gen: int | None) -> None:
    text = text.replace("\0", "")  # no path or name holds a NUL (refused on reading)
    path = "/" + text
    plan = make_plan(
        explicit_path=path,
        memory=(text, "x"),
        sources=(SourceCheck(path=path, observed=Observed(Kind.LINK, text, number, 0, gen)),),
    )
    assert load_plan(dump_plan(plan), path="p.toml") == plan


def test_missing_defaulted_key_takes_the_default() -> None:
    """Forward compatibility: an absent key with a default loads as that default."""
    from aikito_mem.executor.planfile import checksum

    document = tomllib.loads(dump_plan(make_plan()).decode())
    del document["plan"]["operations"][0]["entry"]
    del document["plan"]["sources"][1]["identity"]
    document["checksum"] = checksum(document["plan"])
    plan = load_plan(tomli_w.dumps(document).encode(), path="p.toml")
    assert plan == make_plan()


# -- refusals ---------------------------------------------------------------------------


def refused(data: bytes, code: str, path: str = "x.toml") -> PlanFileError:
    with pytest.raises(PlanFileError) as info:
        load_plan(data, path=path)
    assert info.value.code == code, info.value.message
    assert isinstance(info.value, ConfigError) and info.value.exit_code == 4
    assert repr(path) in info.value.message
    return info.value


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.99])
def test_truncated_file_is_refused(fraction: float) -> None:
    data = dump_plan(make_plan())
    error = refused(data[: int(len(data) * fraction)], "plan.invalid")
    assert "truncated" in error.message


def test_truncated_at_a_line_boundary_fails_the_checksum() -> None:
    data = dump_plan(make_plan())
    lines = data.splitlines(keepends=True)
    cut = b"".join(lines[: len(lines) // 2])
    # Cut inside a multi-line array the file is not TOML; between statements it fails
    # the checksum.  Either way it is refused.
    with pytest.raises(PlanFileError) as info:
        load_plan(cut, path="x.toml")
    assert info.value.code in ("plan.invalid", "plan.checksum")
    cut = data[: data.rindex(b"\n[") + 1] if b"\n[" in data else data[: data.rindex(b"\n")]
    with pytest.raises(PlanFileError):
        load_plan(cut, path="x.toml")


def test_empty_file_is_refused() -> None:
    refused(b"", "plan.invalid")
    refused(b"  \n", "plan.invalid")


def test_edited_value_fails_the_checksum() -> None:
    data = dump_plan(make_plan())
    edited = data.replace(b'"INV-MEM-01"', b'"INV-MEM-02"', 1)
    assert edited != data
    error = refused(edited, "plan.checksum")
    assert error.message == (
        "plan file 'x.toml' failed its checksum (it was edited or truncated) — "
        "re-create it with aikito sync project demo --dry-run --out x.toml"
    )


def test_edited_action_fails_the_checksum() -> None:
    data = dump_plan(make_plan())
    refused(data.replace(b'"CONFLICT"', b'"NOOP"'), "plan.checksum")


def test_wrong_schema_is_refused() -> None:
    data = dump_plan(make_plan()).replace(b"aikito.plan/1", b"aikito.plan/9")
    error = refused(data, "plan.schema")
    assert error.message == (
        "plan file 'x.toml' has schema 'aikito.plan/9'; expected 'aikito.plan/1' — "
        "re-create it with this version: aikito sync project demo --dry-run --out x.toml"
    )


def test_missing_schema_is_refused() -> None:
    data = dump_plan(make_plan()).replace(b'schema = "aikito.plan/1"\n', b"")
    error = refused(data, "plan.schema")
    assert "has no schema" in error.message


def test_missing_checksum_is_refused() -> None:
    document = tomllib.loads(dump_plan(make_plan()).decode())
    del document["checksum"]
    error = refused(tomli_w.dumps(document).encode(), "plan.checksum")
    assert "no checksum" in error.message


def test_wrong_checksum_type_is_refused() -> None:
    document = tomllib.loads(dump_plan(make_plan()).decode())
    document["checksum"] = 5
    refused(tomli_w.dumps(document).encode(), "plan.checksum")


@pytest.mark.parametrize(
    "garbage",
    [b"\x00\x01\x02\xff\xfe", b"not toml at all", b"[plan\n", b"\xef\xbb\xbfschema = 1",
     random.Random(64).randbytes(64).replace(b"\n", b"")],
)
def test_garbage_is_refused(garbage: bytes) -> None:
    with pytest.raises(PlanFileError) as info:
        load_plan(garbage, path="x.toml")
    assert info.value.code in ("plan.invalid", "plan.schema")


def test_valid_toml_without_plan_table_is_refused() -> None:
    refused(b'schema = "aikito.plan/1"\nchecksum = "sha256:00"\n', "plan.invalid")


def test_unexpected_top_level_key_is_refused() -> None:
    data = dump_plan(make_plan())
    refused(b'extra = 1\n' + data, "plan.invalid")


def _resigned(mutate: object) -> bytes:
    """A file whose payload was changed and whose checksum was recomputed to match."""
    from aikito_mem.executor.planfile import checksum

    document = tomllib.loads(dump_plan(make_plan()).decode())
    assert callable(mutate)
    mutate(document["plan"])
    document["checksum"] = checksum(document["plan"])
    return tomli_w.dumps(document).encode()


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda p: p.__setitem__("project", 3), "plan.project must be a string"),
        (lambda p: p.__setitem__("project_memory_exists", "yes"),
         "plan.project_memory_exists must be a boolean"),
        (lambda p: p["sources"][0]["observed"].__setitem__("dev", "1"),
         "plan.sources[0].observed.dev must be an integer"),
        (lambda p: p["sources"][0]["observed"].__setitem__("ino", True),
         "plan.sources[0].observed.ino must be an integer"),
        (lambda p: p["operations"][0].__setitem__("action", "DELETE"),
         "plan.operations[0].action must be one of"),
        (lambda p: p.__setitem__("memory", "x.md"), "plan.memory must be an array"),
        (lambda p: p["memory"].append(1), "plan.memory[3] must be a string"),
        (lambda p: p.__delitem__("workspace"), "plan.workspace is missing"),
        (lambda p: p["checkouts"][0]["dirs"][0].__setitem__("extra", 1),
         "plan.checkouts[0].dirs[0] has an unexpected key 'extra'"),
        (lambda p: p["checkouts"][0]["dirs"][0].__delitem__("observed"),
         "plan.checkouts[0].dirs[0].observed is missing"),
        (lambda p: p["operations"][1].__setitem__("observed", []),
         "plan.operations[1].observed must be a table"),
        (lambda p: p.__setitem__("notes_source", 1.5), "plan.notes_source must be a string"),
        (lambda p: p.__setitem__("surprise", 1), "plan has an unexpected key 'surprise'"),
    ],
)
def test_value_of_wrong_type_is_refused(mutate: object, where: str) -> None:
    error = refused(_resigned(mutate), "plan.invalid")
    assert where in error.message


# -- files ------------------------------------------------------------------------------


def test_write_and_read(tmp_path: Path) -> None:
    target = tmp_path / "plan.toml"
    plan = make_plan()
    write_plan(plan, str(target))
    assert read_plan(str(target)) == plan
    assert target.read_bytes() == dump_plan(plan)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.toml"]


def test_write_replaces_an_existing_file_and_not_through_a_symlink(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("keep me")
    link = tmp_path / "plan.toml"
    link.symlink_to(elsewhere)
    write_plan(make_plan(), str(link))
    assert elsewhere.read_text() == "keep me"
    assert not link.is_symlink()
    assert read_plan(str(link)) == make_plan()


def test_write_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        write_plan(make_plan(), str(tmp_path))
    assert "directory" in info.value.message
    assert list(tmp_path.iterdir()) == []


def test_write_refuses_what_is_not_a_regular_file_and_leaves_it(tmp_path: Path) -> None:
    """``--out`` naming a FIFO (or a device, a socket — ``/dev/null`` run as root), or a
    symlink to one, is refused as a directory is (exit 4, ``plan.write``): the rename
    would put a regular file in its place.  A dangling symlink is replaced, as a symlink
    to a regular file is."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "to-fifo"
    link.symlink_to(fifo)
    for path in (fifo, link):
        with pytest.raises(ConfigError) as info:
            write_plan(make_plan(), str(path))
        assert info.value.code == "plan.write"
        assert info.value.message == (
            f"cannot write the plan to {str(path)!r}: it is a FIFO, not a regular file — "
            "give the name of a file to write, e.g. --out plan.toml")
    assert fifo.is_fifo() and not fifo.is_symlink()
    assert link.is_symlink() and os.readlink(link) == str(fifo)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "to-fifo"]
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    write_plan(make_plan(), str(dangling))
    assert not dangling.is_symlink() and read_plan(str(dangling)) == make_plan()


def test_write_into_missing_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        write_plan(make_plan(), str(tmp_path / "nope" / "plan.toml"))
    assert "nope" in info.value.message


def test_write_failure_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "plan.toml"
    target.write_bytes(b"old")

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(ConfigError) as info:
        write_plan(make_plan(), str(target))
    assert "No space left on device" in info.value.message
    assert info.value.code == "plan.write"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.toml"]
    assert target.read_bytes() == b"old"


def test_read_missing_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.toml")
    with pytest.raises(PlanFileError) as info:
        read_plan(missing)
    assert info.value.code == "plan.missing"
    assert repr(missing) in info.value.message


def test_read_a_directory(tmp_path: Path) -> None:
    with pytest.raises(PlanFileError) as info:
        read_plan(str(tmp_path))
    assert str(tmp_path) in info.value.message


def test_read_truncated_file(tmp_path: Path) -> None:
    target = tmp_path / "plan.toml"
    write_plan(make_plan(), str(target))
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 3])
    with pytest.raises(PlanFileError) as info:
        read_plan(str(target))
    assert info.value.code in ("plan.invalid", "plan.checksum")


# -- strict decoding ([E9]: a malformed plan file is a configuration error) ---------------


def test_non_utf8_name_is_written_as_hex_bytes_and_the_file_stays_utf8() -> None:
    odd = os.fsdecode(b"/abs/co-\xff")
    data = dump_plan(make_plan(explicit_path=odd))
    data.decode("utf-8")  # strict: the file itself is valid UTF-8
    document = tomllib.loads(data.decode())
    assert document["plan"]["explicit_path"] == {"bytes": b"/abs/co-\xff".hex()}
    assert load_plan(data, path="p.toml").explicit_path == odd


def test_file_that_is_not_utf8_is_refused() -> None:
    data = dump_plan(make_plan()).replace(b"team/a.md", b"team/\xff.md", 1)
    error = refused(data, "plan.invalid")
    assert "not valid UTF-8" in error.message and "byte" in error.message


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda p: p.__setitem__("explicit_path", {"bytes": "2f61"}),
         "plan.explicit_path is written as bytes but is valid UTF-8"),
        (lambda p: p.__setitem__("explicit_path", {"bytes": "zz"}),
         "plan.explicit_path has bytes that are not hexadecimal"),
        (lambda p: p.__setitem__("explicit_path", {"bytes": "2f", "x": 1}),
         "plan.explicit_path must be a string, found a table"),
        (lambda p: p.__setitem__("explicit_path", "/a\0b"),
         "plan.explicit_path contains a NUL character"),
        (lambda p: p.__setitem__("explicit_path", {"bytes": "2f00ff"}),
         "plan.explicit_path contains a NUL character"),
    ],
)
def test_bad_string_encodings_are_refused(mutate: object, where: str) -> None:
    error = refused(_resigned(mutate), "plan.invalid")
    assert where in error.message


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_excessive_nesting_is_refused(depth: int) -> None:
    data = b"x = " + b"[" * depth + b"]" * depth + b"\n" + dump_plan(make_plan())
    with pytest.raises(PlanFileError) as info:
        load_plan(data, path="x.toml")
    assert info.value.code == "plan.invalid"


def test_excessive_nesting_inside_the_plan_table_is_refused() -> None:
    depth = 5_000  # readable by tomllib, too deep for the checksum's JSON encoder
    data = dump_plan(make_plan()).replace(
        b"[plan]\n", b"[plan]\ndeep = " + b"[" * depth + b"]" * depth + b"\n", 1)
    with pytest.raises(PlanFileError) as info:
        load_plan(data, path="x.toml")
    assert info.value.code == "plan.invalid"
    assert "nested deeper" in info.value.message


def _create(**changes: object) -> object:
    def mutate(p: dict[str, object]) -> None:
        ops = p["operations"]
        assert isinstance(ops, list)
        ops[0].update(changes)
        for key, value in changes.items():
            if value is None:
                del ops[0][key]

    return mutate


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (_create(source=None), "plan.operations[0].source is missing"),
        (_create(source="memory/a.md"), "plan.operations[0].source must be an absolute path"),
        (_create(target="a.md"), "plan.operations[0].target must be an absolute path"),
        (_create(entry="file"), "plan.operations[0].entry must be 'link' or 'directory'"),
        (_create(entry="directory"), "plan.operations[0].entry is 'directory' for a CREATE"),
        (lambda p: p["operations"][2]["observed"].pop("literal"),
         "plan.operations[2].observed must record a symlink and its literal"),
        (lambda p: p["operations"][3].__setitem__("observed", {"kind": "symlink",
                                                                "literal": "/x"}),
         "plan.operations[3].observed must record a directory"),
        (lambda p: p.update(register=CO, explicit_path=CO),
         "plan.register is set without plan.config_sha256"),
        (lambda p: p.update(register=CO, config_sha256="ab" * 32),
         "plan.register is set without plan.explicit_path"),
        (lambda p: p.update(register="co", explicit_path=CO, config_sha256="ab" * 32),
         "plan.register must be an absolute path or ~/…"),
        (lambda p: p.update(config_sha256="xyz"), "plan.config_sha256 must be a sha256"),
        (lambda p: p.update(config_digest="AB" * 32), "plan.config_digest must be a sha256"),
        (lambda p: p.update(project="../demo"), "plan.project must be one project directory"),
        (lambda p: p.update(project=""), "plan.project must be one project directory"),
        (lambda p: p.update(workspace="ws"), "plan.workspace must be an absolute path"),
        (lambda p: p.update(config_path="agent.toml"),
         "plan.config_path must be an absolute path"),
        (lambda p: p.update(explicit_path="~/co"), "plan.explicit_path must be an absolute"),
        (lambda p: p["sources"][0].update(path="memory/x"),
         "plan.sources[0].path must be an absolute path"),
        (lambda p: p["checkouts"][0].update(path="co"),
         "plan.checkouts[0].path must be an absolute path"),
    ],
)
def test_values_no_plan_can_hold_together_are_refused(mutate: object, where: str) -> None:
    error = refused(_resigned(mutate), "plan.invalid")
    assert where in error.message


def test_offline_checkout_may_have_a_relative_path() -> None:
    """[K2]: a candidate that is not absolute on this system is offline, and recorded so."""
    plan = make_plan()
    assert plan.checkouts[1].path == "D:/code/x"
    assert load_plan(dump_plan(plan), path="p.toml") == plan


def test_read_refuses_an_oversize_file_without_reading_it(tmp_path: Path) -> None:
    from aikito_mem.executor.planfile import MAX_PLAN_BYTES

    target = tmp_path / "plan.toml"
    target.write_bytes(b"")
    os.truncate(target, MAX_PLAN_BYTES + 1)  # sparse
    with pytest.raises(PlanFileError) as info:
        read_plan(str(target))
    assert info.value.code == "plan.invalid" and "larger than" in info.value.message


def test_read_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    target = tmp_path / "plan.toml"
    os.mkfifo(target)
    with pytest.raises(PlanFileError) as info:
        read_plan(str(target))
    assert "FIFO" in info.value.message


def test_read_follows_a_symlink_the_user_named(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    write_plan(make_plan(), str(real))
    link = tmp_path / "plan.toml"
    link.symlink_to(real)
    assert read_plan(str(link)) == make_plan()
