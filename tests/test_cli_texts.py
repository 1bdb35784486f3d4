"""Help, usage errors and ``--version``, byte for byte ([U2], [§12]): what each of a fixed
set of command lines prints — on stdout and on stderr — and its exit code, at 60, 80 and
100 columns, compared with the texts recorded in ``tests/data/cli_texts.json``.

The start-up work changes how the command line is built and parsed, never what it
prints: a change here is a change of a text. After an intended one, record the texts
again (``python -m tests.test_cli_texts``) and read the diff of the JSON file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from aikito_mem.cli import cli

TEXTS = Path(__file__).parent / "data" / "cli_texts.json"

WIDTHS = (60, 80, 100)

#: Every help of the command tree.
HELPS = [[], ["sync"], ["sync", "project"], ["apply"], ["status"], ["doctor"], ["adopt"],
         ["clean"], ["init"], ["init", "project"], ["init", "workspace"], ["agents"],
         ["agents", "add"], ["hook"], ["hook", "install"], ["hook", "uninstall"]]

#: Usage errors (exit 2) said before any workspace is looked for, and ``--version``.
OTHERS = [["-h"], ["--version"], ["--version", "--help"], ["syncc"], ["sync", "projectt"],
          ["sync", "demo"], ["sync", "--nope"], ["sync", "--force"],
          ["sync", "project", "--nope"], ["sync", "project", "--force"],
          ["sync", "--dry-run", "project", "--force"],
          ["sync", "project", "--lock-timeout"],
          ["sync", "project", "--lock-timeout", "nan"],
          ["sync", "project", "--lock-timeout", " inf"],
          ["sync", "project", "--lock-timeout", "abc"],
          ["sync", "project", "--lock-timeout", "-1"],
          ["sync", "project", "demo", "-v", "-q"], ["sync", "-v", "-q"],
          ["sync", "project", "demo", "--out", "plan.toml"],
          ["sync", "project", "a", "b", "c"], ["status", "--nope"], ["sync", "--color=x"]]

CASES = [*([*args, "--help"] for args in HELPS), *OTHERS]


def _key(args: list[str], width: int) -> str:
    return f"{width}: aikito {' '.join(args)}"


def _run(args: list[str], width: int) -> dict[str, object]:
    # A workspace that does not exist: nothing here may get as far as looking for one.
    res = CliRunner().invoke(cli, ["--workspace", "/nonexistent/aikito", *args],
                             prog_name="aikito", catch_exceptions=False,
                             env={"COLUMNS": str(width), "NO_COLOR": "1"})
    return {"exit": res.exit_code, "stdout": res.stdout, "stderr": res.stderr}


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, object]]:
    with open(TEXTS, encoding="utf-8") as fh:
        texts: dict[str, dict[str, object]] = json.load(fh)
    return texts


def test_every_case_is_recorded(recorded: dict[str, dict[str, object]]) -> None:
    assert sorted(recorded) == sorted(_key(a, w) for a in CASES for w in WIDTHS)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_the_text_is_unchanged(args: list[str], width: int,
                               recorded: dict[str, dict[str, object]]) -> None:
    assert _run(args, width) == recorded[_key(args, width)]


def record() -> None:
    texts = {_key(a, w): _run(a, w) for a in CASES for w in WIDTHS}
    TEXTS.parent.mkdir(exist_ok=True)
    with open(TEXTS, "w", encoding="utf-8") as fh:
        json.dump(texts, fh, indent=1, sort_keys=True, ensure_ascii=False)
        fh.write("\n")
    print(f"{len(texts)} texts recorded in {TEXTS.name}", file=sys.stderr)


if __name__ == "__main__":
    record()
