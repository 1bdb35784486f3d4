"""The adversarial input matrix: SPEC [C2]–[C5], [S3], [O1]–[O4], [K2]–[K3] as one
parametrised suite.

Each case builds a world in ``tmp_path`` (workspace, checkout, a throw-away HOME and an
``outside`` directory that nothing may touch), runs the real command line as a subprocess

    aikito --workspace WS sync project demo --json        (a real run, not a dry run)

and asserts: the exit code, that the JSON document names the culprit, and that nothing was
written anywhere under ``tmp_path`` (a full ``lstat`` snapshot: inode, type, mode, size,
mtime/ctime, link literal, content hash).  The few cases that legitimately sync (offline
or non-absolute candidates, a symlink that stays inside the memory root, an owned relative
link, a stale owned link…) assert instead that exactly the expected links appeared and
nothing else changed.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.cli import aikito_argv
from tests.helpers.home import child_env
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

# -- world -------------------------------------------------------------------------------


@dataclass
class World:
    root: Path
    ws: Path
    co: Path
    home: Path
    outside: Path

    @property
    def mem(self) -> Path:
        return self.co / ".agents" / "memory"


def make_world(tmp_path: Path) -> World:
    """:class:`WS` at ``tmp_path`` with its checkouts directory ``co`` as the checkout, a
    throw-away home and an ``outside`` directory beside them."""
    ws = WS(tmp_path)
    root = ws.base
    w = World(root, Path(ws.root), Path(ws.checkouts_dir), root / "home", root / "outside")
    os.makedirs(os.path.dirname(ws.config_path("demo")))
    w.home.mkdir()
    w.outside.mkdir()
    (w.outside / "secret.md").write_text("outside\n")
    for name in ("a.md", "b.md"):
        ws.add_file(name, f"{name}\n")
    ws.add_file("glossary/terms.md", "terms\n")
    ws.add_file("team/a.md", "team a\n")
    return w


def write_config(w: World, body: str) -> None:
    text = body.format(co=w.co, ws=w.ws, outside=w.outside, home=w.home)
    (w.ws / "projects" / "demo" / "agent.toml").write_text(text, encoding="utf-8")


def run_sync(w: World) -> tuple[int, dict[str, object], str]:
    proc = subprocess.run(
        aikito_argv("--workspace", str(w.ws), "sync", "project", "demo", "--json"),
        cwd=w.home, env=child_env(w.home, NO_COLOR="1"), capture_output=True, text=True,
        timeout=60,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["exit_code"] == proc.returncode
    return proc.returncode, doc, proc.stderr


# -- the matrix ----------------------------------------------------------------------------

PATHS = 'paths = ["{co}"]\n'
Setup = Callable[[World], None]


def _nothing(w: World) -> None:
    pass


@dataclass
class Case:
    id: str
    config: str
    exit: int
    #: Substrings the JSON document must contain (the culprit).
    culprit: tuple[str, ...]
    setup: Setup = _nothing
    #: For legitimate syncs: runtime path (relative to .agents/memory) -> literal.  The
    #: links that must exist afterwards; nothing else may change.
    links: dict[str, str] | None = None
    #: Entries below .agents/memory that must be gone afterwards (stale owned links).
    removed: tuple[str, ...] = field(default_factory=tuple)


def _mkfifo(rel: str) -> Setup:
    def setup(w: World) -> None:
        os.mkfifo(w.ws / "memory" / rel)
    return setup


def _symlink(at: str, literal: str) -> Setup:
    """``at`` relative to the world root; ``literal`` may use {ws} {co} {outside}."""
    def setup(w: World) -> None:
        path = w.root / at
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(literal.format(ws=w.ws, co=w.co, outside=w.outside), path)
    return setup


def _file(at: str, text: str = "user data\n") -> Setup:
    def setup(w: World) -> None:
        path = w.root / at
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return setup


def _dir(at: str) -> Setup:
    def setup(w: World) -> None:
        (w.root / at).mkdir(parents=True, exist_ok=True)
    return setup


def _hardlink(src: str, at: str) -> Setup:
    def setup(w: World) -> None:
        path = w.root / at
        path.parent.mkdir(parents=True, exist_ok=True)
        os.link(w.root / src, path)
    return setup


def _all(*steps: Setup) -> Setup:
    def setup(w: World) -> None:
        for step in steps:
            step(w)
    return setup


LONG = "x" * 256

CASES: list[Case] = [
    # [C2] memory must be a list of strings.
    Case("C2-string", PATHS + 'memory = "a.md"\n', 4, ("'memory'", "a string")),
    Case("C2-table", PATHS + "memory = {{a = 1}}\n", 4, ("'memory'",)),
    Case("C2-number", PATHS + "memory = 3\n", 4, ("'memory'",)),
    Case("C2-nested-list", PATHS + 'memory = [["a.md"]]\n', 4, ("memory[0]",)),
    Case("C2-non-string-element", PATHS + 'memory = ["a.md", 3]\n', 4, ("memory[1]",)),
    Case("C2-bool-element", PATHS + 'memory = ["a.md", "b.md", true]\n', 4, ("memory[2]",)),
    # [C3] each reference a clean relative POSIX path.
    Case("C3-empty", PATHS + 'memory = [""]\n', 4, ("memory[0]",)),
    Case("C3-absolute", PATHS + 'memory = ["/etc/passwd"]\n', 4, ("'/etc/passwd'",)),
    Case("C3-dotdot", PATHS + 'memory = ["a.md", "../outside/secret.md"]\n', 4,
         ("'../outside/secret.md'", "memory[1]")),
    Case("C3-inner-dotdot", PATHS + 'memory = ["team/../a.md"]\n', 4, ("'team/../a.md'",)),
    Case("C3-dot", PATHS + 'memory = ["./a.md"]\n', 4, ("'./a.md'",)),
    Case("C3-empty-component", PATHS + 'memory = ["team//a.md"]\n', 4, ("'team//a.md'",)),
    Case("C3-trailing-slash", PATHS + 'memory = ["glossary/"]\n', 4, ("'glossary/'",)),
    Case("C3-backslash", PATHS + 'memory = ["team\\\\a.md"]\n', 4, ("memory[0]",)),
    Case("C3-control", PATHS + 'memory = ["a\\u0001.md"]\n', 4, ("U+0001",)),
    Case("C3-newline", PATHS + 'memory = ["a\\n.md"]\n', 4, ("memory[0]",)),
    Case("C3-del", PATHS + 'memory = ["a\\u007f.md"]\n', 4, ("U+007F",)),
    Case("C3-c1", PATHS + 'memory = ["a\\u0085.md"]\n', 4, ("U+0085",)),
    Case("C3-zero-width-joiner", PATHS + 'memory = ["a\\u200d.md"]\n', 4, ("U+200D",)),
    Case("C3-bidi-override", PATHS + 'memory = ["a\\u202e.md"]\n', 4, ("U+202E",)),
    Case("C3-bom", PATHS + 'memory = ["\\ufeffa.md"]\n', 4, ("U+FEFF",)),
    Case("C3-leading-space", PATHS + 'memory = [" a.md"]\n', 4, ("' a.md'",)),
    Case("C3-trailing-space-component", PATHS + 'memory = ["team /a.md"]\n', 4,
         ("'team /a.md'",)),
    Case("C3-long-component", PATHS + f'memory = ["{LONG}"]\n', 4, ("memory[0]", "255")),
    # [C4] duplicates, NFC / case-fold equality, prefixes.
    Case("C4-duplicate", PATHS + 'memory = ["a.md", "b.md", "a.md"]\n', 4,
         ("memory[0]", "memory[2]")),
    Case("C4-nfc", PATHS + 'memory = ["caf\\u00e9.md", "cafe\\u0301.md"]\n', 4,
         ("memory[0]", "memory[1]", "NFC")),
    Case("C4-casefold", PATHS + 'memory = ["A.md", "a.md"]\n', 4,
         ("'A.md'", "'a.md'", "case")),
    Case("C4-prefix", PATHS + 'memory = ["team", "team/a.md"]\n', 4, ("'team'", "'team/a.md'")),
    Case("C4-prefix-reversed", PATHS + 'memory = ["team/a.md", "b.md", "team"]\n', 4,
         ("'team'", "'team/a.md'")),
    # [C5] paths / path types.
    Case("C5-paths-number", 'paths = 3\nmemory = ["a.md"]\n', 4, ("paths",)),
    Case("C5-paths-bad-element", 'paths = ["{co}", 3]\nmemory = ["a.md"]\n', 4, ("paths",)),
    Case("C5-paths-table-bad-value", '[paths]\nlaptop = 3\n', 4, ("laptop",)),
    Case("C5-path-number", 'path = 3\nmemory = ["a.md"]\n', 4, ("path",)),
    Case("C5-path-bad-list", 'path = ["{co}", 1]\nmemory = ["a.md"]\n', 4, ("path",)),
    # [S3] unsafe or missing sources: CONFLICT, exit 1, nothing written.
    Case("S3-missing-source", PATHS + 'memory = ["a.md", "gone.md"]\n', 1,
         ("gone.md", "does not exist")),
    Case("S3-link-leaves-root", PATHS + 'memory = ["a.md", "evil.md"]\n', 1,
         ("evil.md", "{outside}"), _symlink("ws/memory/evil.md", "{outside}/secret.md")),
    Case("S3-dir-link-leaves-root", PATHS + 'memory = ["evil/secret.md"]\n', 1,
         ("evil",), _symlink("ws/memory/evil", "{outside}")),
    Case("S3-relative-link-leaves-root", PATHS + 'memory = ["evil.md"]\n', 1,
         ("evil.md",), _symlink("ws/memory/evil.md", "../../outside/secret.md")),
    Case("S3-broken-link", PATHS + 'memory = ["broken.md"]\n', 1,
         ("broken.md", "broken"), _symlink("ws/memory/broken.md", "{ws}/memory/nowhere")),
    Case("S3-fifo", PATHS + 'memory = ["a.md", "pipe"]\n', 1, ("pipe", "FIFO"),
         _mkfifo("pipe")),
    Case("S3-notes-leave-project-root", PATHS + 'memory = ["a.md"]\n', 1,
         ("notes", "{outside}"),
         _all(_dir("ws/projects/demo/memory"),
              _symlink("ws/projects/demo/memory/notes", "{outside}"))),
    Case("S3-notes-regular-file", PATHS + 'memory = ["a.md"]\n', 1, ("notes",),
         _file("ws/projects/demo/memory/notes")),
    Case("S3-project-memory-root-file", PATHS + 'memory = ["a.md"]\n', 1,
         ("ws/projects/demo/memory",), _file("ws/projects/demo/memory")),
    Case("S3-internal-link-syncs", PATHS + 'memory = ["alias.md"]\n', 0, ("alias.md",),
         _symlink("ws/memory/alias.md", "a.md"),
         links={"alias.md": "{ws}/memory/alias.md"}),
    # [O1] ownership is the literal only.
    Case("O1-hardlink-at-target", PATHS + 'memory = ["a.md"]\n', 1, (".agents/memory/a.md",),
         _hardlink("ws/memory/a.md", "co/.agents/memory/a.md")),
    Case("O1-copy-at-target", PATHS + 'memory = ["a.md"]\n', 1,
         (".agents/memory/a.md", "regular file"), _file("co/.agents/memory/a.md", "a.md\n")),
    Case("O1-link-to-other-resource", PATHS + 'memory = ["a.md", "b.md"]\n', 1,
         (".agents/memory/a.md", "{ws}/memory/b.md"),
         _symlink("co/.agents/memory/a.md", "{ws}/memory/b.md")),
    Case("O1-non-normal-absolute-literal", PATHS + 'memory = ["a.md"]\n', 1,
         ("{ws}/memory//a.md",), _symlink("co/.agents/memory/a.md", "{ws}/memory//a.md")),
    Case("O1-link-through-alias", PATHS + 'memory = ["a.md"]\n', 1, ("{ws}/../alias/memory/a.md",),
         _all(_symlink("alias", "{ws}"),
              _symlink("co/.agents/memory/a.md", "{ws}/../alias/memory/a.md"))),
    Case("O1-dangling-at-target", PATHS + 'memory = ["a.md"]\n', 1, (".agents/memory/a.md",),
         _symlink("co/.agents/memory/a.md", "{outside}/nowhere")),
    Case("O1-empty-dir-at-target", PATHS + 'memory = ["glossary"]\n', 1,
         (".agents/memory/glossary", "directory"), _dir("co/.agents/memory/glossary")),
    Case("O1-fifo-at-target", PATHS + 'memory = ["a.md"]\n', 1, (".agents/memory/a.md",),
         lambda w: (w.mem.mkdir(parents=True), os.mkfifo(w.mem / "a.md"))),
    Case("O1-relative-owned-link-is-noop", PATHS + 'memory = ["a.md"]\n', 0, ("a.md",),
         _symlink("co/.agents/memory/a.md", "../../../ws/memory/a.md"),
         links={"a.md": "../../../ws/memory/a.md"}),
    # [O2] stale owned links are unlinked; foreign stale entries preserved with a warning.
    Case("O2-stale-owned-link", PATHS + 'memory = ["a.md"]\n', 0, ("b.md",),
         _symlink("co/.agents/memory/b.md", "{ws}/memory/b.md"),
         links={"a.md": "{ws}/memory/a.md"}, removed=("b.md",)),
    Case("O2-legacy-notes-replaced", PATHS + 'memory = ["a.md"]\n', 0, ("notes",),
         _all(_dir("ws/projects/demo/memory/notes"), _dir("ws/memory/demo/notes"),
              _symlink("co/.agents/memory/notes", "{ws}/memory/demo/notes")),
         links={"a.md": "{ws}/memory/a.md",
                "notes": "{ws}/projects/demo/memory/notes"}),
    Case("O2-foreign-stale-preserved", PATHS + 'memory = ["a.md"]\n', 0,
         (".agents/memory/old.md", "memory.foreign_entry"),
         _symlink("co/.agents/memory/old.md", "{ws}/memory/b.md"),
         links={"a.md": "{ws}/memory/a.md", "old.md": "{ws}/memory/b.md"}),
    # [O3]/[O4] runtime parents that are not real directories.
    Case("O4-agents-symlink", PATHS + 'memory = ["a.md"]\n', 1, ("{co}/.agents",),
         _symlink("co/.agents", "{outside}")),
    Case("O4-agents-file", PATHS + 'memory = ["a.md"]\n', 1, ("{co}/.agents", "regular file"),
         _file("co/.agents")),
    Case("O4-agents-dangling", PATHS + 'memory = ["a.md"]\n', 1, ("{co}/.agents",),
         _symlink("co/.agents", "{outside}/nowhere")),
    Case("O4-memory-symlink", PATHS + 'memory = ["a.md"]\n', 1, ("{co}/.agents/memory",),
         _all(_dir("co/.agents"), _symlink("co/.agents/memory", "{outside}"))),
    Case("O4-memory-file", PATHS + 'memory = ["a.md"]\n', 1, ("{co}/.agents/memory",),
         _file("co/.agents/memory")),
    Case("O4-intermediate-symlink", PATHS + 'memory = ["team/a.md"]\n', 1,
         (".agents/memory/team",), _symlink("co/.agents/memory/team", "{outside}")),
    Case("O4-intermediate-file", PATHS + 'memory = ["team/a.md"]\n', 1,
         (".agents/memory/team",), _file("co/.agents/memory/team")),
    Case("O4-intermediate-owned-looking-link", PATHS + 'memory = ["a.md", "team/a.md"]\n', 1,
         (".agents/memory/team",), _symlink("co/.agents/memory/team", "{ws}/memory/glossary")),
    # [K2] non-absolute candidates are offline, never resolved against the cwd.
    Case("K2-relative-path-offline", 'paths = ["co"]\nmemory = ["a.md"]\n', 0,
         ("not an absolute path",), _dir("home/co")),
    Case("K2-windows-path-offline", 'paths = ["D:/code/demo"]\nmemory = ["a.md"]\n', 0,
         ("D:/code/demo", "not an absolute path")),
    Case("K2-relative-beside-active", 'paths = ["co", "{co}"]\nmemory = ["a.md"]\n', 0,
         ("not an absolute path",), _dir("home/co"), links={"a.md": "{ws}/memory/a.md"}),
    # [K3] offline = does not exist; a non-directory is a conflict.
    Case("K3-offline", 'paths = ["{root}/nowhere"]\nmemory = ["a.md"]\n', 0,
         ("{root}/nowhere", "offline")),
    Case("K3-offline-beside-active", 'paths = ["{root}/nowhere", "{co}"]\nmemory = ["a.md"]\n',
         0, ("{root}/nowhere",), links={"a.md": "{ws}/memory/a.md"}),
    Case("K3-file-is-conflict", 'paths = ["{root}/file"]\nmemory = ["a.md"]\n', 1,
         ("{root}/file", "regular file"), _file("file")),
    Case("K3-file-blocks-active", 'paths = ["{root}/file", "{co}"]\nmemory = ["a.md"]\n', 1,
         ("{root}/file",), _file("file")),
    Case("K3-tilde-offline", 'paths = ["~/missing"]\nmemory = ["a.md"]\n', 0,
         ("{home}/missing",)),
]


def _fmt(text: str, w: World) -> str:
    return text.format(ws=w.ws, co=w.co, outside=w.outside, home=w.home, root=w.root)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_adversarial_matrix(tmp_path: Path, case: Case) -> None:
    w = make_world(tmp_path)
    write_config(w, case.config.replace("{root}", str(w.root)))
    case.setup(w)
    before = snapshot(w.root)
    code, doc, stderr = run_sync(w)
    after = snapshot(w.root)

    assert code == case.exit, (doc.get("error"), stderr)
    text = json.dumps(doc, ensure_ascii=False)
    for culprit in case.culprit:
        assert _fmt(culprit, w) in text, (culprit, text)
    if case.exit == 4:
        assert doc["outcome"] == "config_error"
        assert doc["error"]["code"].startswith("config.")
    elif case.exit == 1:
        assert doc["outcome"] == "blocked"
        assert all(op["status"] == "not_applied" for op in doc["operations"])
        assert any(op["action"] == "CONFLICT" for op in doc["operations"])

    if case.links is None and not case.removed:
        assert after == before, "a refused or no-op run wrote something"
        return
    # A legitimate sync: only the expected links appeared (and the stale ones went).
    expected = {str(w.mem / rel): _fmt(lit, w) for rel, lit in (case.links or {}).items()}
    gone = {str(w.mem / rel) for rel in case.removed}
    runtime = (str(w.co), str(w.co / ".agents"), str(w.mem))
    for path, sig in before.items():
        if path in gone:
            assert path not in after, f"stale owned link {path} was not removed"
            continue
        if path in runtime or path in expected:
            continue
        assert after.get(path) == sig, f"{path} changed"
    for path in after:
        if path in before or path in runtime[1:]:
            continue
        assert path in expected, f"unexpected new entry {path}"
    for path, literal in expected.items():
        assert os.readlink(path) == literal
    assert doc["outcome"] in ("applied", "unchanged")


def test_matrix_covers_every_requirement() -> None:
    prefixes = {c.id.split("-")[0] for c in CASES}
    assert prefixes >= {"C2", "C3", "C4", "C5", "S3", "O1", "O2", "O4", "K2", "K3"}
