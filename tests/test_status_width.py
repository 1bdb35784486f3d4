"""[U2] ``aikito status`` fits the width: a table with a PATH column when every line fits,
else each path on an indented line of its own below its row (SYNC wrapped in its
column), else one block per checkout; a path is never cut.  Exact text at 60, 80, 100 and
200 columns on a workspace of fixed path lengths, and a property over generated reports
and widths."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from aikito_mem.cli import cli
from aikito_mem.commands.status import CheckoutStatus, ProjectStatus, StatusReport, SyncCounts
from aikito_mem.model import CheckoutState
from aikito_mem.render.status import text_table
from aikito_mem.render.text import Display, shown_name
from tests.helpers.workspace import WS


@pytest.fixture
def world() -> Iterator[WS]:
    """Under ``/tmp/aikito-XXXXXXXX`` (a base of fixed length, so the layout each width
    gets is fixed): ``customer-portal`` with a checkout that has a skill and a note to
    link, a conflict and a foreign entry, and an offline one; ``analytics`` in sync;
    ``broken`` unreadable."""
    base = tempfile.mkdtemp(prefix="aikito-", dir="/tmp")
    try:
        ws = WS(base)
        ws.add_file("style.md", "s\n")
        ws.add_file("glossary.md", "g\n")
        ws.add_skill("review")
        laptop = ws.checkout("home/me/code/customer-portal")
        ws.write_config("customer-portal", memory=["style.md", "glossary.md"],
                        skills=["review"],
                        paths={"laptop": laptop, "feature-branch": f"{ws.checkouts_dir}/home/"
                               "me/code/customer-portal-wt/payments"})
        os.makedirs(ws.runtime(laptop))
        Path(ws.runtime(laptop, "glossary.md")).write_text("mine\n")  # a conflict
        Path(ws.runtime(laptop, ".DS_Store")).write_text("x\n")  # a foreign entry
        analytics = ws.checkout("home/me/code/analytics")
        ws.write_config("analytics", memory=["style.md"], paths=[analytics])
        ws.write_config("broken", raw="memory = [\n")
        assert CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project",
                                        "analytics"]).exit_code == 0
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def status_at(ws: WS, columns: int) -> list[str]:
    res = CliRunner().invoke(cli, ["--workspace", ws.root, "status"], catch_exceptions=False,
                             env={"COLUMNS": str(columns)})
    assert res.exit_code == 4  # broken is a configuration error
    return res.stdout.replace(str(ws.base), "<base>").splitlines()


LAPTOP = "<base>/co/home/me/code/customer-portal"
FEATURE = "<base>/co/home/me/code/customer-portal-wt/payments"
ANALYTICS = "<base>/co/home/me/code/analytics"
PENDING = "skills: 1 to create; memory: 1 to create, 1 conflict, 1 foreign entry"
ERROR = ("error: project broken: <base>/ws/projects/broken/agent.toml:2:1: invalid TOML: "
         "Invalid value — fix the syntax at that position (see https://toml.io)")

EXPECTED = {
    200: [
        "workspace <base>/ws (option)",
        f"PROJECT          CHECKOUT        STATE    {'SYNC':<{len(PENDING)}}  PATH",
        f"analytics        1               active   {'in sync':<{len(PENDING)}}  {ANALYTICS}",
        "broken           -               error    cannot be read (see below)",
        f"customer-portal  laptop          active   {PENDING}  {LAPTOP}",
        f"customer-portal  feature-branch  offline  {'offline (not checked)':<{len(PENDING)}}  "
        f"{FEATURE}",
    ],
    100: [
        "workspace <base>/ws (option)",
        "PROJECT          CHECKOUT        STATE    SYNC",
        "analytics        1               active   in sync",
        f"    {ANALYTICS}",
        "broken           -               error    cannot be read (see below)",
        "customer-portal  laptop          active   skills: 1 to create; memory: 1 to create, 1 "
        "conflict, 1",
        "                                          foreign entry",
        f"    {LAPTOP}",
        "customer-portal  feature-branch  offline  offline (not checked)",
        f"    {FEATURE}",
    ],
    80: [
        "workspace <base>/ws (option)",
        "PROJECT          CHECKOUT        STATE    SYNC",
        "analytics        1               active   in sync",
        f"    {ANALYTICS}",
        "broken           -               error    cannot be read (see below)",
        "customer-portal  laptop          active   skills: 1 to create; memory: 1 to",
        "                                          create, 1 conflict, 1 foreign entry",
        f"    {LAPTOP}",
        "customer-portal  feature-branch  offline  offline (not checked)",
        f"    {FEATURE}",
    ],
    60: [
        "workspace <base>/ws (option)",
        "analytics/1: active, in sync",
        f"    {ANALYTICS}",
        "broken: error, cannot be read (see below)",
        "customer-portal/laptop: active, skills: 1 to create; memory:",
        "        1 to create, 1 conflict, 1 foreign entry",
        f"    {LAPTOP}",
        "customer-portal/feature-branch: offline (not checked)",
        f"    {FEATURE}",
    ],
}


@pytest.mark.parametrize("columns", sorted(EXPECTED))
def test_status_fits_the_width(world: WS, columns: int) -> None:
    lines = status_at(world, columns)
    rows = len(EXPECTED[columns])
    assert lines[:rows] == EXPECTED[columns]
    assert lines[-1] == "status: 3 projects, 1 not in sync, 1 with errors"
    for line in lines:  # [U2]: the error too; only a path wider than the line is longer
        assert len(line.replace("<base>", "/tmp/aikito-xxxxxxxx")) <= columns or \
            line.strip() in (FEATURE, LAPTOP, ANALYTICS), line
    error = " ".join(line.strip() for line in lines[rows:-1])
    assert error == ERROR


# ------------------------------------------------------------------ the property

_NAME = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz-0123456789"), min_size=1,
                max_size=16)
_PATH = st.lists(st.text(st.sampled_from("abcdefgh-_. é"), min_size=1, max_size=24),
                 min_size=1, max_size=6).map(lambda parts: "/" + "/".join(parts))
_COUNTS = st.builds(SyncCounts, *(st.integers(0, 3000),) * 4)


@st.composite
def _checkout(draw: st.DrawFn) -> CheckoutStatus:
    state = draw(st.sampled_from(CheckoutState))
    sync = None if state is CheckoutState.OFFLINE else draw(_COUNTS)
    segments = tuple((name, draw(_COUNTS)) for name in ("skills", "instructions", "memory")
                     if draw(st.booleans())) if sync is not None else ()
    return CheckoutStatus(draw(_NAME), draw(_PATH), state, sync=sync, segments=segments)


_REPORTS = st.builds(
    StatusReport, _PATH, st.sampled_from(["option", "AIKITO_DIR", "pointer file"]),
    st.lists(st.builds(ProjectStatus, _NAME, checkouts=st.lists(_checkout(), max_size=3)
                       .map(tuple)), max_size=4).map(tuple))


@given(report=_REPORTS, width=st.integers(40, 220))
def test_every_status_line_fits_unless_it_is_one_path(report: StatusReport, width: int
                                                      ) -> None:
    """[U2]: whatever the names, paths (spaces included) and counts, every line is within
    the width unless it is a single path standing whole on its line; every path is
    printed whole (quoted when a component starts or ends with a space)."""
    lines = "\n".join(text_table(report, Display(width=width))).splitlines()
    assert report.workspace is not None
    paths = {shown_name(co.path) for p in report.projects for co in p.checkouts}
    paths.add(shown_name(report.workspace))
    for line in lines:
        assert len(line) <= width or line.strip() in paths, (width, line)
    for path in paths - {shown_name(report.workspace)}:
        assert any(path in line for line in lines), path



def test_descriptor_lines_and_colour_keep_the_width() -> None:
    """The descriptor lines wrap like every line ([U2]); in colour, every line of a row —
    its wrapped SYNC and its path — is in the row's colour, and no text changes."""
    from aikito_mem.model import Finding, Severity
    from aikito_mem.world.descriptor import DescriptorState, MemoryDescriptor

    warning = Finding("descriptor.invalid", Severity.WARNING,
                      "/srv/long-project-name/.agents/config.yaml: not valid YAML (line 3)")
    descriptor = MemoryDescriptor("/srv/long-project-name", "/srv/long-project-name/"
                                  ".agents/config.yaml", DescriptorState.INVALID,
                                  findings=(warning,))
    co = CheckoutStatus("laptop", "/srv/long-project-name", CheckoutState.ACTIVE,
                        sync=SyncCounts(create=2, conflict=1), descriptor=descriptor,
                        index="/srv/long-project-name/.agents/memory/MEMORY.md")
    report = StatusReport("/ws", "option", (ProjectStatus("demo", checkouts=(co,)),))
    plain = text_table(report, Display(width=40))
    assert plain == [
        "workspace /ws (option)",
        "demo/laptop: active, 2 to create, 1",
        "        conflict",
        "    /srv/long-project-name",
        "descriptor demo/laptop: unreadable\n    .agents/config.yaml (see the warning\n"
        "    below), index MEMORY.md",
        "warning:\n    /srv/long-project-name/.agents/config.yaml:\n    not valid YAML (line 3)",
        "status: 1 project, 1 not in sync",
    ]
    import click

    coloured = text_table(report, Display(width=40, color=True))
    assert [click.unstyle(line) for line in coloured] == plain
    assert coloured[1:4] == [click.style(line, fg="red", bold=True) for line in plain[1:4]]
