"""The README's "Getting started", followed literally in a fresh home directory.

The fenced ``sh`` blocks of that section are extracted from README.md — so this test
breaks when the README drifts — and run in order, in one ``bash`` (an ``export`` of one
step holds for the next), each command with its own output and exit code, with ``HOME``
and the XDG directories pointing into the test's temporary directory and a ``PATH`` on
which no ``aikito`` is found but the one the README installs.  Each ``text`` block after
a command is that command's expected output (abridged; ``/home/you`` is the home
directory): every line of it must be printed.

Every command must be one this test knows how to judge: a new step in the README needs
an assertion here.  The alternative ``pipx install .`` is checked to be there, not run
(pipx is not a dependency of the suite); the virtual-environment way is run as written —
``pip install .`` from a copy of the repository, with pip's own cache reused.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

REPO = Path(__file__).resolve().parent.parent
#: pip's cache of whoever runs the suite (taken before the tests point HOME elsewhere).
PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or os.path.expanduser("~/.cache/pip")
README_HOME = "/home/you"


@attrs.frozen
class Step:
    command: str
    #: The ``text`` block shown after it, if any.
    expected: tuple[str, ...] = ()


def section(text: str, title: str = "## Getting started") -> str:
    start = text.index(f"\n{title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def steps(markdown: str) -> list[Step]:
    """Commands of the ``sh`` blocks (continuation lines joined, comments and blank lines
    dropped), each with the ``text`` block that follows its block."""
    out: list[Step] = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", markdown, re.S | re.M):
        if lang == "sh":
            for line in body.replace("\\\n", " ").splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    out.append(Step(line.strip()))
        elif lang == "text":
            assert out, "an output block before any command"
            out[-1] = attrs.evolve(out[-1], expected=tuple(body.splitlines()))
        else:
            raise AssertionError(f"unexpected ```{lang} block in Getting started")
    return out


@attrs.frozen
class Ran:
    command: str
    code: int
    stdout: str
    stderr: str


def run_all(commands: list[str], cwd: Path, env: dict[str, str], tmp: Path) -> list[Ran]:
    """Run ``commands`` in one bash, in order, each one's output and status captured."""
    script = []
    for i, command in enumerate(commands):
        script.append(f"{{\n{command}\n}} >{tmp}/out.{i} 2>{tmp}/err.{i}\n"
                      f"echo $? >{tmp}/rc.{i}")
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-c", "\n".join(script)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return [Ran(c, int((tmp / f"rc.{i}").read_text()), (tmp / f"out.{i}").read_text(),
                (tmp / f"err.{i}").read_text()) for i, c in enumerate(commands)]


def clean_path() -> str:
    """``PATH`` without any directory that has an ``aikito`` (the suite's own venv)."""
    dirs = os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    return os.pathsep.join(d for d in dirs if d and not os.path.exists(f"{d}/aikito"))


def copy_repo(dest: Path) -> None:
    """What ``pip install .`` needs of the repository (a build writes into its source)."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "aikito_mem", dest / "aikito_mem",
                    ignore=shutil.ignore_patterns("__pycache__"))


def test_getting_started_section_is_extracted() -> None:
    """The parser itself, on the README: the steps the section must have."""
    found = [s.command for s in steps(section((REPO / "README.md").read_text("utf-8")))]
    assert "pipx install ." in found
    for needed in ("aikito init", "aikito init project demo ~/code/demo"):
        assert needed in found
    assert found.count("aikito sync project demo") == 2


def test_readme_getting_started_in_a_fresh_home(tmp_path: Path,
                                                request: pytest.FixtureRequest) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    all_steps = steps(section((REPO / "README.md").read_text("utf-8")))
    # The pipx alternative is documented, not run; the venv way below is.
    pipx = [s.command for s in all_steps if s.command.startswith("pipx ")]
    assert pipx == ["pipx install .", "pipx ensurepath"]
    assert all_steps[:2] == [Step(c) for c in pipx]
    todo = all_steps[2:]
    # A home of a short, fixed length, whatever the length of this machine's TMPDIR: the
    # README's output is shown at 100 columns, and a longer home would wrap its lines.
    home = Path(os.path.realpath(tempfile.mkdtemp(prefix="aikito-home-", dir="/tmp")))
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    src = tmp_path / "aikito_mem-src"
    copy_repo(src)
    path = clean_path()
    python3 = shutil.which("python3", path=path)
    if python3 is None:
        pytest.skip("no python3 on PATH")
    version = subprocess.run([python3, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
    if version != "True":
        pytest.skip(f"{python3} is older than Python 3.11, which the README requires")
    env = {
        "HOME": str(home), "PATH": path, "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"), "PIP_CACHE_DIR": PIP_CACHE,
    }
    for key in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CERT",
                "PIP_CONFIG_FILE", "PIP_DEFAULT_TIMEOUT", "PIP_DISABLE_PIP_VERSION_CHECK",
                "SSL_CERT_FILE", "http_proxy", "https_proxy", "no_proxy"):
        if key in os.environ:  # how this machine reaches its package index
            env[key] = os.environ[key]
    ws, co = home / "aikito", home / "code/demo"
    # Probes of this test between the README's commands: which aikito runs, and the
    # identity and times of the link after each sync.
    probe = (f"{python3} -c 'import os; st = os.lstat(\"{co}/.agents/memory/conventions.md\"); "
             "print(st.st_ino, st.st_mtime_ns, st.st_ctime_ns)'")
    commands: list[str] = []
    for step in todo:
        commands.append(step.command)
        if step.command.startswith("aikito sync"):
            commands.append(probe)
    commands.append("command -v aikito")
    ran = run_all(commands, src, env, tmp_path)
    where = ran.pop()
    assert where.stdout.strip() == f"{home}/.venvs/aikito/bin/aikito", where
    results = [r for r in ran if r.command != probe]
    links = [r.stdout for r in ran if r.command == probe]
    syncs: list[Ran] = []

    def ok(r: Ran) -> None:
        assert r.code == 0, (r.command, r.stdout, r.stderr)

    def pip_install(r: Ran) -> None:
        ok(r)
        assert (home / ".venvs/aikito/bin/aikito").exists()

    def init(r: Ran) -> None:
        ok(r)
        lines = r.stdout.splitlines()
        assert lines[0] == f"Initialised workspace {ws}"
        for name in ("projects", "memory", "skills", "subagents"):
            assert f"  created      {name}/" in lines and (ws / name).is_dir()
        # A fresh home with no agent on PATH: no agents/ registry, and a note [N2].
        assert not (ws / "agents").exists()
        assert any("aikito agents add NAME" in line for line in lines)
        assert (home / ".config/aikito/workspace").read_text() == f"{ws}\n"

    def init_project(r: Ran) -> None:
        ok(r)
        assert "  checkout     ~/code/demo" in r.stdout.splitlines()
        assert 'paths = ["~/code/demo"]' in (ws / "projects/demo/agent.toml").read_text()

    def memory_file(r: Ran) -> None:
        ok(r)
        assert (ws / "memory/conventions.md").read_text().strip()

    def edit_config(r: Ran) -> None:
        ok(r)
        import tomllib

        config = tomllib.loads((ws / "projects/demo/agent.toml").read_text())
        assert config["memory"] == ["conventions.md"] and config["paths"] == ["~/code/demo"]
        assert sorted(os.listdir(ws / "projects/demo")) == ["agent.toml"]

    def sync(r: Ran) -> None:
        ok(r)
        link = co / ".agents/memory/conventions.md"
        plus = [line for line in r.stdout.splitlines() if line.lstrip().startswith("+ ")]
        if not syncs:  # the first sync links the file
            assert len(plus) == 1 and "conventions.md -> " in plus[0], r.stdout
            assert plus[0].rstrip().endswith("memory/conventions.md"), r.stdout
            assert os.readlink(link) == f"{ws}/memory/conventions.md"
            syncs.append(r)
            return
        # The second: nothing to do, one line ([U3]).
        assert r.stdout.splitlines() == ["demo: in sync (1 checkout)"], r.stdout
        syncs.append(r)

    def status(r: Ran) -> None:
        ok(r)
        assert "in sync" in r.stdout and "all in sync" in r.stdout.splitlines()[-1]

    judges: list[tuple[str, Callable[[Ran], None]]] = [
        (r"python3 -m venv ~/\.venvs/aikito", ok),
        (r"~/\.venvs/aikito/bin/pip install \.", pip_install),
        (r'export PATH="\$HOME/\.venvs/aikito/bin:\$PATH"', ok),
        (r"aikito init", init),
        (r"mkdir -p ~/code/demo", ok),
        (r"aikito init project demo ~/code/demo", init_project),
        (r"echo .+ > ~/aikito/memory/conventions\.md", memory_file),
        (r"sed -i\.bak .+ ~/aikito/projects/demo/agent\.toml && rm .+\.bak", edit_config),
        (r"aikito sync project demo", sync),
        (r"aikito status", status),
    ]
    for step, r in zip(todo, results, strict=True):
        matching = [judge for pattern, judge in judges if re.fullmatch(pattern, step.command)]
        assert len(matching) == 1, (
            f"README step {step.command!r} is new to this test: add its assertion")
        matching[0](r)
        shown = [line.replace(README_HOME, str(home)) for line in step.expected]
        missing = [line for line in shown if line not in r.stdout.splitlines()]
        assert not missing, (step.command, missing, r.stdout)
    assert len(syncs) == 2
    # The second sync changed nothing: the link is the very one the first one made.
    assert len(links) == 2 and links[0] == links[1] and links[0].strip()
