"""The checkouts room on real directories: candidates resolved by the kernel as written,
de-duplicated by directory identity (symlink spellings, bind mounts) or, offline, by
lexical path ([K1]); explicit checkouts ([K4]); checkouts inside the workspace refused."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aikito_mem.errors import ConfigError
from aikito_mem.model import CheckoutState, Kind, Observed
from aikito_mem.world.checkouts import entry_named, given_path, slots
from aikito_mem.world.observe import Observer
from tests.helpers import mounts
from tests.helpers.cli import Env, one_json
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS


def paths_of(doc: dict[str, object]) -> list[tuple[str, str, str]]:
    return [(c["label"], c["path"], c["state"]) for c in doc["checkouts"]]  # type: ignore[attr-defined]


@pytest.fixture
def dotdot(env: Env) -> tuple[Path, Path]:
    """``<base>/x/link -> <base>/far/deep``: ``x/link/../co`` is ``far/co`` for the kernel
    and ``x/co`` as text.  Both directories exist."""
    (env.base / "far/deep").mkdir(parents=True)
    (env.base / "far/co").mkdir()
    (env.base / "x").mkdir()
    (env.base / "x/co").mkdir()
    (env.base / "x/link").symlink_to(env.base / "far/deep")
    return env.base / "far/co", env.base / "x/co"


# --------------------------------------------------------------------------- [K1] as written


def test_dotdot_after_a_symlink_is_resolved_by_the_kernel(
    env: Env, dotdot: tuple[Path, Path]
) -> None:
    kernel, lexical = dotdot
    spelled = f"{env.base}/x/link/../co"
    env.config(["glossary.md"], [spelled])
    code, doc = env.json("demo")
    assert code == 0, doc
    assert paths_of(doc) == [("1", str(kernel), "active")]
    assert os.readlink(env.mem("glossary.md", kernel)) == f"{env.ws}/memory/glossary.md"
    assert os.listdir(lexical) == []  # the lexical shortening is never written


def test_dotdot_where_the_kernel_finds_nothing_is_offline(
    env: Env, dotdot: tuple[Path, Path]
) -> None:
    _kernel, lexical = dotdot
    spelled = f"{env.base}/x/link/../gone"
    (lexical.parent / "gone").mkdir()  # exists lexically, not where the kernel goes
    env.config(["glossary.md"], [spelled])
    code, doc = env.json("demo")
    assert code == 0, doc
    assert paths_of(doc) == [("1", spelled, "offline")]
    assert os.listdir(lexical.parent / "gone") == []


def test_lexical_twins_that_are_different_directories_are_both_synced(
    env: Env, dotdot: tuple[Path, Path]
) -> None:
    kernel, lexical = dotdot
    env.config(["glossary.md"], [f"{env.base}/x/link/../co", str(lexical)])
    code, doc = env.json("demo")
    assert code == 0, doc
    assert paths_of(doc) == [("1", str(kernel), "active"), ("2", str(lexical), "active")]
    assert env.mem("glossary.md", kernel).is_symlink()
    assert env.mem("glossary.md", lexical).is_symlink()


def test_two_spellings_of_one_directory_are_one_checkout(env: Env) -> None:
    (env.base / "alias").symlink_to(env.co)
    (env.base / "sub").mkdir()
    env.config(["glossary.md"], [f"{env.base}/alias", str(env.co), f"{env.base}/sub/../co/"])
    code, doc = env.json("demo")
    assert code == 0, doc
    assert paths_of(doc) == [("1", str(env.co), "active")]
    assert [op["action"] for op in doc["operations"]] == ["CREATE"]


def test_offline_duplicates_by_lexical_path(env: Env) -> None:
    gone = env.base / "gone"
    env.config(["glossary.md"], [str(gone), f"{env.base}/nothing/../gone", str(env.co)])
    code, doc = env.json("demo", "--dry-run")
    assert code == 0
    assert paths_of(doc) == [("1", str(gone), "offline"), ("3", str(env.co), "active")]


@pytest.fixture
def bind(env: Env) -> Iterator[Path]:
    """``<base>/bind``: a bind mount of the checkout (root only; unmounted afterwards)."""
    with mounts.bind(env.co, env.base / "bind") as target:
        yield target


def test_bind_mount_of_a_checkout_is_one_checkout_locked_once(env: Env, bind: Path) -> None:
    env.config(["team/a.md", "glossary.md"], [env.co, bind])
    code, doc = env.json("demo", "--lock-timeout", "0")
    assert code == 0, doc  # not 6: the one directory is locked once
    assert doc["outcome"] == "applied"
    assert paths_of(doc) == [("1", str(env.co), "active")]
    assert sorted(os.listdir(env.mem())) == ["glossary.md", "team"]
    code, doc = env.json("demo", "--lock-timeout", "0")
    assert (code, doc["outcome"]) == (0, "unchanged")


def test_bind_mount_listed_first_wins(env: Env, bind: Path) -> None:
    env.config(["glossary.md"], [bind, env.co])
    code, doc = env.json("demo", "--lock-timeout", "0")
    assert code == 0, doc
    assert paths_of(doc) == [("1", str(bind), "active")]
    assert env.mem("glossary.md").is_symlink()  # the same directory


def test_explicit_bind_mount_of_a_registered_checkout_is_registered(
    env: Env, bind: Path
) -> None:
    before = env.cfg.read_bytes()
    code, doc = env.json("demo", str(bind))
    assert code == 0, doc
    assert env.cfg.read_bytes() == before  # the same directory: nothing to register
    assert paths_of(doc) == [("1", str(bind), "active")]


# --------------------------------------------------------------------------- explicit PATH


def test_explicit_dotdot_is_registered_as_the_kernel_reaches_it(
    env: Env, dotdot: tuple[Path, Path]
) -> None:
    kernel, lexical = dotdot
    code, doc = env.json("demo", f"{env.base}/x/link/../co")
    assert code == 0, doc
    assert paths_of(doc) == [("explicit", str(kernel), "active")]
    assert tomllib.loads(env.cfg.read_text())["paths"] == [str(env.co), str(kernel)]
    assert os.listdir(lexical) == []


def test_given_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "real/deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real/deep")
    monkeypatch.chdir(tmp_path)
    assert given_path("a//b/./c/") == f"{tmp_path}/a/b/c"
    assert given_path("link") == f"{tmp_path}/link"  # a final symlink is kept as spelled
    assert given_path("link/../x") == f"{tmp_path}/real/x"
    assert given_path("/..") == "/"
    assert given_path(f"{tmp_path}/nothing/../y") == f"{tmp_path}/nothing/../y"


@pytest.mark.parametrize("char", ["\x00", "\n", "\x1b"])
def test_explicit_path_with_a_control_character_is_refused(env: Env, char: str) -> None:
    before = snapshot(env.base)
    with pytest.raises(ConfigError) as info:
        given_path(f"{env.base}/a{char}b")
    assert info.value.code == "config.checkout_path"
    if char != "\x00":  # argv cannot hold a NUL
        odd = env.base / f"a{char}b"
        odd.mkdir()
        before = snapshot(env.base)
        code, doc = env.json("demo", str(odd))
        assert code == 4 and doc["error"]["code"] == "config.checkout_path"
        assert "control character" in doc["error"]["message"]
    assert changed(before, snapshot(env.base)) == set()


# --------------------------------------------------------------------------- inside the workspace
# [H1] as a whole is tests/test_refused_checkouts.py; these are the workspace's own trees.


@pytest.mark.parametrize(
    "where",
    ["memory/team", "memory", "skills/s", "projects/demo/memory", "projects/demo/memory/x",
     "projects/other/memory/notes", "memory-link/sub", "elsewhere", "projects/demo/other"],
)
def test_checkout_inside_the_workspace_is_refused(env: Env, where: str) -> None:
    """Listed: an invalid checkout, its segments blocked (exit 1), nothing written; given
    explicitly: a configuration error (exit 4), nothing registered."""
    (env.ws / "elsewhere").mkdir()
    (env.ws / "memory/team").mkdir(parents=True, exist_ok=True)
    os.symlink(env.ws / "memory", env.base / "memory-link")
    inside = env.base / where if where.startswith("memory-link") else env.ws / where
    inside.mkdir(parents=True, exist_ok=True)
    env.config(["glossary.md"], [env.co, inside])
    before = snapshot(env.base)
    for args in ((), ("--dry-run",)):
        code, doc = env.json("demo", *args)
        assert code == 1, doc
        assert paths_of(doc)[1] == ("2", os.path.realpath(inside), "invalid")
        conflict, = [op for op in doc["operations"] if op["action"] == "CONFLICT"]
        assert "link cycle" in conflict["reason"]
    code, doc = env.json("demo", str(inside), "--no-register")
    assert code == 4 and doc["error"]["code"] == "config.checkout_in_workspace"
    assert os.path.realpath(inside) in doc["error"]["message"]
    assert changed(before, snapshot(env.base)) == set()


def test_checkout_inside_a_symlinked_memory_tree(env: Env) -> None:
    """``<ws>/memory`` is a symlink to a directory elsewhere: physically inside it is
    inside the workspace memory tree."""
    real = env.base / "real-memory"
    os.rename(env.ws / "memory", real)
    os.symlink(real, env.ws / "memory")
    (real / "sub").mkdir()
    env.config(["glossary.md"], [real / "sub"])
    code, doc = env.json("demo", "--dry-run")
    assert code == 1 and paths_of(doc)[0][2] == "invalid", doc
    code, doc = env.json("demo", str(real / "sub"), "--dry-run")
    assert code == 4 and doc["error"]["code"] == "config.checkout_in_workspace"


def test_checkout_beside_the_workspace_is_fine(env: Env) -> None:
    for name in ("memory-old", "ws-old/projects/demo", "skillset"):
        (env.base / name).mkdir(parents=True)
    env.config(["glossary.md"], [env.base / "memory-old", env.base / "ws-old/projects/demo",
                                 env.base / "skillset"])
    code, doc = env.json("demo", "--dry-run")
    assert code == 0, doc


def test_reporters_see_a_checkout_inside_the_workspace_as_invalid(ws: WS) -> None:
    inside = ws.add_dir("team")
    ws.write_config("demo", memory=[], paths=[inside])
    slot, = slots(ws.project("demo").config, Observer())
    assert slot.state is CheckoutState.INVALID
    assert "link cycle" in (slot.reason or "")
    with pytest.raises(ConfigError):
        slots(ws.project("demo").config, Observer(), strict=True)


def test_status_and_doctor_report_it_without_a_traceback(env: Env) -> None:
    inside = env.ws / "memory/team"
    env.config(["glossary.md"], [inside])
    status = env.run("status", "--json")
    project, = one_json(status.stdout)["projects"]
    assert [c["state"] for c in project["checkouts"]] == ["invalid"]
    doctor = env.run("doctor", "--json")
    assert doctor.exception is None or isinstance(doctor.exception, SystemExit)
    one_json(doctor.stdout)


class _SwappingObserver(Observer):
    """Replaces the symlink ``link`` by one to ``other`` right after ``stat`` followed it:
    the race between the kernel's answer and the physical path, made deterministic."""

    def __init__(self, link: Path, other: Path) -> None:
        super().__init__()
        self.link, self.other = link, other

    def stat_follow(self, path: str):  # type: ignore[no-untyped-def]
        obs = super().stat_follow(path)
        if path == str(self.link):
            self.link.unlink()
            self.link.symlink_to(self.other)
        return obs


def test_a_checkout_swapped_while_examined_is_invalid(ws: WS) -> None:
    first, second = ws.checkout("first"), ws.checkout("second")
    link = Path(ws.base) / "link"
    link.symlink_to(first)
    ws.write_config("demo", memory=[], paths=[str(link)])
    slot, = slots(ws.project("demo").config, _SwappingObserver(link, Path(second)))
    assert slot.state is CheckoutState.INVALID
    assert "changed while being examined" in (slot.reason or "")


def test_explicit_dotdot_through_nothing_is_nothing(env: Env) -> None:
    """``<base>/nothing/../co``: the kernel reaches nothing, so the existing ``co`` is
    never synced or registered through that spelling."""
    before = snapshot(env.base)
    code, doc = env.json("demo", f"{env.base}/nothing/../co")
    assert code == 4 and doc["error"]["code"] == "config.checkout_path"
    assert changed(before, snapshot(env.base)) == set()


@given(names=st.lists(st.text(alphabet="ab.M", max_size=3), unique=True), name=st.text(
    alphabet="ab.M", max_size=3))
def test_entry_named_finds_what_bisect_finds(names: list[str], name: str) -> None:
    """The look-up of one entry in a sorted scan (the memory index, [§12]: no ``bisect``)."""
    import bisect


    entries = tuple((n, Observed(Kind.FILE, str(i))) for i, n in enumerate(sorted(names)))
    i = bisect.bisect_left(entries, (name,))
    expected = entries[i][1] if i < len(entries) and entries[i][0] == name else None
    assert entry_named(entries, name) is expected
