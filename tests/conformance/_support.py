"""Helpers of the black-box conformance suite (:mod:`tests.conformance`): the world
builder :class:`W`, the real ``aikito`` process runner and the checks of the JSON
document SPEC §9 defines.  Written from the specification alone: it drives the product only through
its command line and its public API."""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers.home import child_env
from tests.helpers.workspace import WS

# The interpreter running the suite is the project's environment: its `aikito` script sits
# beside it (no machine path is named here).
VENV_BIN = Path(sys.executable).parent
AIKITO = str(VENV_BIN / "aikito")
PY = sys.executable

TOP_KEYS = {
    "schema", "project", "workspace", "dry_run", "outcome", "exit_code", "summary",
    "checkouts", "operations", "findings", "segments", "error",
}
OUTCOMES = {"applied", "unchanged", "planned", "blocked", "stale", "failed", "busy",
            "config_error", "interrupted"}
ACTIONS = {"CREATE", "NOOP", "CONFLICT", "UNLINK", "SKIP"}
SUMMARY_RE = re.compile(
    r"^memory: (\d+) to create, (\d+) to unlink, (\d+) conflicts?, (\d+) unchanged, "
    r"(\d+) skipped( \((\d+) checkouts? offline\))?$"
)


def tq(s: str) -> str:
    """A TOML basic string for ``s`` (every non-printable-ASCII char escaped)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04X}")
        else:
            out.append(f"\\U{o:08X}")
    return '"' + "".join(out) + '"'


def tlist(items) -> str:
    return "[" + ", ".join(tq(i) for i in items) + "]"


class Res:
    def __init__(self, cp: subprocess.CompletedProcess):
        self.rc = cp.returncode
        self.out = cp.stdout
        self.err = cp.stderr

    @property
    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return f"<rc={self.rc}\nstdout={self.out[:3000]}\nstderr={self.err[:2000]}>"


def clean_env(home: Path, extra: dict | None = None) -> dict:
    """The environment of a real ``aikito`` process with ``home`` as its home, nothing of
    the caller's aikito or colour settings, the C.UTF-8 locale, and ``extra`` on top."""
    return child_env(home, LC_ALL="C.UTF-8", **(extra or {}))


def run(args, home: Path, cwd: Path | None = None, extra_env: dict | None = None,
        timeout: float = 20) -> Res:
    cp = subprocess.run(
        [AIKITO, *map(str, args)], capture_output=True, text=True,
        env=clean_env(home, extra_env), cwd=str(cwd or home), timeout=timeout,
    )
    return Res(cp)


class W:
    """A temporary world: home, workspace, checkouts."""

    def __init__(self, tmp: Path):
        #: The workspace ``<tmp>/ws`` (``memory/``, ``projects/``) and the checkout
        #: ``<tmp>/co``, made by the suite's one builder.
        self.builder = WS(tmp)
        self.tmp = self.builder.base
        self.home = self.tmp / "home"
        self.home.mkdir()
        self.ws = Path(self.builder.root)
        (self.ws / "projects" / "demo").mkdir()
        self.co = Path(self.builder.checkouts_dir)

    # layout helpers
    @property
    def toml(self) -> Path:
        return Path(self.builder.config_path("demo"))

    def agent(self, memory=None, paths=None, extra: str = "", raw: str | None = None):
        if raw is not None:
            self.builder.write_config("demo", raw=raw)
            return
        lines = []
        if paths is None:
            paths = [str(self.co)]
        lines.append(f"paths = {tlist(paths)}")
        if memory is not None:
            lines.append(f"memory = {tlist(memory)}")
        text = "\n".join(lines) + "\n" + extra
        self.builder.write_config("demo", raw=text)

    def mem(self, rel: str, content: str = "x\n") -> Path:
        return Path(self.builder.add_file(rel, content))

    def memdir(self, rel: str) -> Path:
        p = Path(self.builder.add_dir(rel))
        (p / "inside.md").write_text("i\n")
        return p

    def notes_current(self) -> Path:
        return self._notes(legacy=False)

    def notes_legacy(self) -> Path:
        return self._notes(legacy=True)

    def _notes(self, legacy: bool) -> Path:
        p = Path(self.builder.notes_path("demo", legacy))
        p.mkdir(parents=True, exist_ok=True)
        (p / "n.md").write_text("n\n")
        return p

    def rt(self, rel: str = "", co: Path | None = None) -> Path:
        base = (co or self.co) / ".agents" / "memory"
        return base / rel if rel else base

    def src(self, rel: str) -> str:
        return str(self.ws / "memory" / rel)

    def cli(self, *args, **kw) -> Res:
        return run(["--workspace", self.ws, *args], self.home, **kw)

    def sync(self, *args, **kw) -> Res:
        return self.cli("sync", "project", "demo", *args, **kw)

    def jsync(self, *args, **kw) -> tuple[Res, dict]:
        r = self.sync("--json", *args, **kw)
        try:
            doc = r.json
        except Exception as e:  # pragma: no cover - diagnostic
            raise AssertionError(f"stdout is not one JSON document: {e}\n{r!r}") from e
        return r, doc


def ops(doc, action=None, resource=None):
    return [o for o in doc["operations"]
            if (action is None or o["action"] == action)
            and (resource is None or o["resource"] == resource)]


def op_for(doc, target: Path | str):
    found = [o for o in doc["operations"] if o["target"] == str(target)]
    assert found, f"no operation for {target}: {json.dumps(doc['operations'], indent=1)}"
    return found


def assert_schema(doc, rc):
    missing = TOP_KEYS - set(doc)
    assert not missing, f"missing top-level keys {missing}"
    assert doc["schema"] == "aikito.sync/2"
    assert doc["outcome"] in OUTCOMES
    assert doc["exit_code"] == rc
    assert isinstance(doc["dry_run"], bool)
    assert set(doc["summary"]) >= {"create", "noop", "unlink", "conflict", "skip"}
    for o in doc["operations"]:
        assert o["action"] in ACTIONS
        for k in ("action", "rule", "checkout", "resource", "target", "source", "reason",
                  "status"):
            assert k in o, f"operation lacks {k}: {o}"
    for c in doc["checkouts"]:
        assert {"label", "path", "state"} <= set(c)
        assert c["state"] in {"active", "offline", "invalid"}
    for f in doc["findings"]:
        assert {"code", "severity", "message"} <= set(f)
    assert "memory" in doc["segments"] and isinstance(doc["segments"]["memory"]["success"], bool)
    if doc["error"] is not None:
        assert isinstance(doc["error"]["code"], str) and doc["error"]["code"]
        assert isinstance(doc["error"]["message"], str) and doc["error"]["message"]


def assert_config_error(r: Res, *must_name: str):
    assert r.rc == 4, r
    doc = r.json
    assert_schema(doc, 4)
    assert doc["outcome"] == "config_error"
    assert doc["error"] and doc["error"]["code"]
    msg = doc["error"]["message"]
    for n in must_name:
        assert n in msg, f"error message should name {n!r}: {msg!r}"
    assert "Traceback" not in r.err and "Traceback" not in r.out
    return doc


def hold_lock(path: Path) -> int:
    fd = os.open(str(path), os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def make_workspace(root: Path, with_project=True) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "projects").mkdir()
    if with_project:
        (root / "projects" / "demo").mkdir()
        (root / "projects" / "demo" / "agent.toml").write_text("paths = []\n")
    return root


def save_plan(w, *args) -> Path:
    plan = w.tmp / "plan.toml"
    r = w.sync("--dry-run", "--out", plan, *args)
    assert r.rc == 0, r
    assert plan.exists()
    return plan


def apply_plan(w, plan, *args, **kw):
    r = w.cli("apply", plan, "--json", *args, **kw)
    return r, r.json


def unwrapped(text: str) -> str:
    """``text`` with each wrapped line joined back to the line it continues ([U2]: a line
    longer than the width goes on, indented deeper than its first line)."""
    out: list[str] = []
    for line in text.splitlines():
        depth = len(line) - len(line.lstrip(" "))
        if out and line.strip() and depth >= 4 and depth > len(out[-1]) - len(
                out[-1].lstrip(" ")):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)
