"""docs/rules.md defines every rule id the repository cites, and the tests it names for an id
do cite that id: a reader who meets [E9] in a comment can look it up."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "docs" / "rules.md"
#: A rule id as cited: [E9], [§12], INV-MEM-07.
CITED = re.compile(rb"\[[A-Z][0-9]+\]|\[\xc2\xa7[0-9]+\]|INV-MEM-[0-9]{2}")
#: A definition's heading on the page: **[E9] …** or a table row | [§12] | or | INV-MEM-07 |.
DEFINED = re.compile(r"^\*\*(\[[A-Z][0-9]+\])|^\| (\[§[0-9]+\]|INV-MEM-[0-9]{2}) \|", re.M)


def _tracked(*where: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", "--", *where], cwd=ROOT,
                         capture_output=True, check=False).stdout
    files = [ROOT / name for name in out.decode("utf-8", "surrogateescape").split("\0") if name]
    if not files:  # not a git checkout (an sdist): read the tree instead
        files = [p for w in where for p in ([ROOT / w] if (ROOT / w).is_file()
                                            else (ROOT / w).rglob("*")) if p.is_file()]
    return [p for p in files if p.is_file()]


def _definitions() -> dict[str, int]:
    text = RULES.read_text(encoding="utf-8")
    found: dict[str, int] = {}
    for match in DEFINED.finditer(text):
        rule = match.group(1) or match.group(2)
        found[rule] = found.get(rule, 0) + 1
    return found


def test_every_cited_id_is_defined() -> None:
    defined = _definitions()
    missing: dict[str, str] = {}
    for path in _tracked("aikito_mem", "tests", "docs", "README.md"):
        if path.suffix in {".pyc", ".png"}:
            continue
        for raw in set(CITED.findall(path.read_bytes())):
            rule = raw.decode()
            if rule not in defined:
                missing.setdefault(rule, str(path.relative_to(ROOT)))
    assert not missing, f"ids cited but not defined in docs/rules.md: {missing}"


def test_each_id_is_defined_once() -> None:
    twice = {rule for rule, n in _definitions().items() if n > 1}
    assert not twice


def test_the_tests_named_for_an_id_cite_it() -> None:
    text = RULES.read_text(encoding="utf-8")
    wrong: list[str] = []
    for block in re.split(r"\n(?=\*\*\[)", text):
        head = re.match(r"\*\*(\[[A-Z][0-9]+\])", block)
        tests = re.search(r"^Tests: (.*?)\.$", block, re.M | re.S)
        if head is None or tests is None:
            continue
        for name in re.findall(r"`([^`]+)`", tests.group(1)):
            path = ROOT / name
            if not path.is_file() or head.group(1) not in path.read_text(encoding="utf-8"):
                wrong.append(f"{head.group(1)}: {name}")
    assert not wrong, wrong


def test_the_page_names_no_undefined_part() -> None:
    """The checker itself: an id it cannot find is reported (a guard on the guard)."""
    assert "[E9]" in _definitions()
    assert "[§12]" in _definitions()
    assert "INV-MEM-07" in _definitions()
    assert "[" + "Z9]" not in _definitions()  # spelt apart: this file cites no id
