"""Running the command line: in process through ``click.testing.CliRunner`` and as real
processes, plus :class:`Env`, the world of the command-line tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from aikito_mem.cli import cli
from tests.helpers.workspace import WS, config_text

#: The directory of the interpreter running the suite: the project's environment, with
#: the ``aikito`` console script beside it.
VENV_BIN = Path(sys.executable).parent


def invoke(*args: str, env: dict[str, str] | None = None, color: bool = False,
           catch: bool = False) -> Result:
    """``aikito ARGS`` in process.  An exception escaping the CLI (a traceback) fails the
    test, unless ``catch``: then it is left on ``result.exception`` for the test to judge."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=catch, env=env, color=color)


def aikito_argv(*args: str) -> list[str]:
    """The argument vector of a real ``python -m aikito_mem ARGS`` process."""
    return [sys.executable, "-m", "aikito_mem", *args]


def imported_modules(*args: str, cwd: str | None = None
                     ) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m aikito_mem ARGS``; return the process and the names
    of every module it imported (a structural check of §12 start-up, not a timing)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "aikito_mem", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120)
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    return proc, imported


def one_json(stdout: str) -> dict[str, Any]:
    """Exactly one JSON document and nothing else on stdout."""
    doc, end = json.JSONDecoder().raw_decode(stdout)
    assert stdout[end:].strip() == "", f"more than one document: {stdout[end:]!r}"
    assert isinstance(doc, dict)
    return doc


class Env(WS):
    """A :class:`WS` with project ``demo`` (``team/a.md``, ``glossary.md``) and one
    checkout, ``<base>/co`` itself; ``ws``, ``co`` and ``cfg`` as :class:`Path`."""

    def __init__(self, base: Path | str) -> None:
        super().__init__(base)
        self.ws = Path(self.root)
        self.co = Path(self.checkouts_dir)
        self.add_file("team/a.md", "a\n")
        self.add_file("glossary.md", "g\n")
        self.cfg = self.config(["team/a.md", "glossary.md"], [self.co])

    def config(
        self, memory: list[str] | None, paths: list[Any] | None, name: str = "demo",
        extra: str = "",
    ) -> Path:
        """``projects/<name>/agent.toml`` with ``memory`` and ``paths`` (each omitted when
        ``None``) followed by ``extra``."""
        return Path(self.write_config(name, raw=config_text(memory, paths) + extra))

    def raw(self, data: bytes, name: str = "demo") -> Path:
        return Path(self.write_config(name, raw=data))

    def mem(self, rel: str = "", co: Path | None = None) -> Path:
        return Path(self.runtime(str(co or self.co), rel))

    def run(self, *args: str, color: bool = False, workspace: bool = True) -> Any:
        argv = ["--workspace", str(self.ws)] if workspace else []
        return invoke(*argv, *args, color=color, catch=True)

    def sync(self, *args: str, **kw: Any) -> Any:
        return self.run("sync", "project", *args, **kw)

    def json(self, *args: str) -> tuple[int, dict[str, Any]]:
        result = self.sync(*args, "--json")
        assert result.exception is None or isinstance(result.exception, SystemExit), \
            result.exception
        return result.exit_code, one_json(result.stdout)
