"""Untrusted input: ``agent.toml`` bytes and workspace pointer-file bytes, fuzzed.

Random bytes, random mutations of valid files (bytes replaced, inserted, deleted,
duplicated, and tokens that matter spliced in: NUL, escapes, brackets, a BOM, near-miss
keys…) and random TOML documents over the keys the engine reads.  Parsing or loading
never raises anything but :class:`~aikito_mem.errors.ConfigError` ([C1]–[C7], [G1]), the
file read gives the same answer as the pure parser, resolving the workspace through a
fuzzed pointer file never raises anything else ([W1], [C6]), and a sync fed a mutated
file exits with a documented code, no traceback, and writes nothing when refused.
Examples are bounded; a watchdog turns a hang into a failure instead of a stuck suite.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
import tomli_w
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from aikito_mem.config.agent_toml import READ_KEYS, parse_project_config
from aikito_mem.config.discovery import resolve_workspace
from aikito_mem.config.projects import load_project_config
from aikito_mem.errors import ConfigError
from aikito_mem.model import ProjectConfig
from tests.helpers.cli import Env
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.strategies import fs_examples

#: Seconds one example may take before it counts as a hang (a watchdog, not a timing
#: assertion: every example takes milliseconds).
HANG = 60

SEEDS = [
    b'name = "demo"\npaths = ["~/code/demo", "/srv/demo"]\n'
    b'memory = ["team/conventions.md", "glossary", "decisions/adr"]\n'
    b'skills = ["review", "deploy"]\nsync_mode = "link"\n',
    b'memory = ["a.md"]\n[paths]\nlaptop = "~/code/demo"\n"my box" = "/srv/x"\n',
    b'path = ["/a", "/b"]\nmemory = []\n[tool.other]\nx = 1\n',
    b'# a comment\nmemory = [\n  "a.md",  # c\n  "b/c",\n]\npath = "~/x"\n',
    b'memory = ["x"]\r\npaths = ["/co"]\r\n[[servers]]\r\nname = "a"\r\n',
]

TOKENS = [
    b"\x00", b"\\u0000", b"\\u001b", b"\\n", b'"', b"'", b'"""', b"'''", b"[", b"]", b"[[",
    b"{", b"}", b"=", b",", b".", b"\n", b"\r", b"\t", b"\\", b"\xff", b"\xc3", b"\xef\xbb\xbf",
    b"memroy", b"Memory", b"pahts", b"paht", b"skils", b"skills", b"sync_mode", b"syncmode",
    b'"copy"', b'"LINK"', b"..", b"/", b"~", b"1979-05-27T07:32:00Z", b"inf", b"nan",
    b"\xe2\x80\x8b", b"\xc2\x85", b"0x1F", b"true", b"[" * 40, b"]" * 40,
]


@contextlib.contextmanager
def watchdog(seconds: int = HANG) -> Iterator[None]:
    """Fail (instead of hanging) when the body runs longer than ``seconds``."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise AssertionError(f"no answer after {seconds} s: the input made it hang")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed with a few random edits."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 8))):
        pos = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(["replace", "insert", "delete", "duplicate", "token"]))
        if edit == "replace" and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif edit == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif edit == "delete":
            del data[pos:pos + draw(st.integers(1, 8))]
        elif edit == "duplicate":
            data[pos:pos] = data[pos:pos + draw(st.integers(1, 16))]
        else:
            data[pos:pos] = draw(st.sampled_from(TOKENS))
    return bytes(data)


_scalars = (
    st.text(max_size=12) | st.integers() | st.booleans() | st.floats()
    | st.sampled_from(["link", "LINK", "copy", "", "~", "/", "..", "a/b", "\x00", "~/x/../y"])
    | st.datetimes(max_value=datetime.datetime(9999, 1, 1)) | st.dates()
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
_keys = st.sampled_from([*READ_KEYS, "name", "memroy", "pahts", "Skills", "sync_mod",
                         "sync_trigger"]) | st.text(max_size=10)


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    """A random TOML document over the keys the engine reads (and their near misses)."""
    doc = draw(st.dictionaries(_keys, _values, max_size=6))
    try:
        return tomli_w.dumps(doc).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError):
        return b""  # a document tomli_w cannot write (a lone surrogate…)


agent_toml = st.binary(max_size=300) | mutated(SEEDS) | documents()


def parse(data: bytes, ws: str = "/ws") -> ProjectConfig:
    return parse_project_config(
        data, name="demo", project_dir=f"{ws}/projects/demo",
        config_path=f"{ws}/projects/demo/agent.toml", home="/home/u",
    )


@given(agent_toml)
def test_agent_toml_bytes_never_raise_anything_but_config_error(data: bytes) -> None:
    with watchdog():
        try:
            config = parse(data)
        except ConfigError as exc:
            assert exc.exit_code == 4 and exc.message and exc.code.startswith("config.")
            assert exc.path == "/ws/projects/demo/agent.toml"
        else:
            assert isinstance(config, ProjectConfig)
            assert all(isinstance(s, str) for s in config.skills)
            assert all("\x00" not in c.path for c in config.candidates)


@settings(max_examples=fs_examples(40),
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=agent_toml)
def test_loading_agent_toml_is_parsing_its_bytes(data: bytes) -> None:
    """The read through the filesystem answers exactly as the pure parser."""
    with tempfile.TemporaryDirectory() as tmp, watchdog():
        ws = os.path.realpath(tmp)
        os.makedirs(f"{ws}/projects/demo")
        Path(f"{ws}/projects/demo/agent.toml").write_bytes(data)
        outcomes = []
        for load in (lambda: parse(data, ws),
                     lambda: load_project_config(ws, "demo", environ={"HOME": "/home/u"})):
            try:
                outcomes.append(load())
            except ConfigError as exc:
                outcomes.append((exc.code, exc.message))
        assert outcomes[0] == outcomes[1]


POINTER_SEEDS = [b"/ws\n", b"~/aikito\n", b"  /a b/c  \r\nsecond line\n", b"\n", b""]


@settings(max_examples=fs_examples(60))
@given(st.binary(max_size=120) | mutated(POINTER_SEEDS))
def test_pointer_file_bytes_never_raise_anything_but_config_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp, watchdog():
        home = os.path.realpath(tmp)
        os.makedirs(f"{home}/aikito/projects")
        os.makedirs(f"{home}/.config/aikito")
        Path(f"{home}/.config/aikito/workspace").write_bytes(data)
        try:
            ws = resolve_workspace(environ={"HOME": home})
        except ConfigError as exc:
            assert exc.exit_code == 4 and exc.code.startswith("config.")
        else:
            assert os.path.isabs(ws.root) and "\x00" not in ws.root


def _stays_inside(data: bytes, env: Env) -> bool:
    """Whether every checkout the mutated file names is inside the test's directory (a
    mutation may well spell ``/``: this suite must never sync the machine's root)."""
    home = os.path.realpath(os.environ["HOME"])  # the suite's temporary home
    try:
        config = parse_project_config(
            data, name="demo", project_dir=f"{env.ws}/projects/demo",
            config_path=str(env.cfg), home=home,
        )
    except ConfigError:
        return True
    return all(os.path.realpath(c.path).startswith((f"{env.base}/", f"{home}/"))
               for c in config.candidates if c.absolute)


@settings(max_examples=fs_examples(15), deadline=None)
@given(st.data())
def test_a_sync_fed_a_mutated_agent_toml_refuses_cleanly(data: st.DataObject) -> None:
    """Exit 0, 1 or 4 — never a traceback — and nothing written when refused."""
    with tempfile.TemporaryDirectory() as tmp, watchdog():
        env = Env(Path(tmp))
        seeds = [env.cfg.read_bytes(), *(seed.replace(b"/srv/demo", str(env.co).encode())
                                          for seed in SEEDS[:2])]
        raw = data.draw(mutated(seeds) | documents())
        assume(_stays_inside(raw, env))
        assert env.json("demo")[0] == 0  # links of a good sync in place
        env.raw(raw)
        before = snapshot(env.base)
        result = env.sync("demo", "--json")
        assert result.exception is None or isinstance(result.exception, SystemExit), \
            result.exception
        assert result.exit_code in (0, 1, 4), result.stdout
        if result.exit_code == 4:
            assert changed(before, snapshot(env.base)) == set()


def test_the_watchdog_turns_a_hang_into_a_failure() -> None:
    import time

    with pytest.raises(AssertionError, match="made it hang"), watchdog(1):
        time.sleep(3)
