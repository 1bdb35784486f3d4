"""§9 Command line: exit codes, JSON, text, ``--check``, saved plans.

Black-box conformance, from the specification alone: see :mod:`tests.conformance`."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.conformance._support import (
    AIKITO,
    SUMMARY_RE,
    apply_plan,
    assert_schema,
    clean_env,
    make_workspace,
    op_for,
    ops,
    run,
    save_plan,
    tq,
)


def test_cli_text_lines_and_summary(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(paths=[str(w.co), str(w.tmp / "off")], memory=["a.md", "b.md"])
    w.rt().mkdir(parents=True)
    os.symlink(w.src("b.md"), w.rt("b.md"))
    r = w.sync("--dry-run")
    assert r.rc == 0, r
    lines = r.out.splitlines()
    plus = [ln for ln in lines if re.match(r"^\s*\+ ", ln)]
    assert len(plus) == 1
    m = re.match(r"^\s*\+ (\S+) -> (\S+)$", plus[0])
    # SPEC §9: sources relative to the workspace, targets relative to their checkout.
    assert m and m.group(2) == "memory/a.md"
    assert m.group(1) in {str(w.rt("a.md")), ".agents/memory/a.md", "a.md"}
    assert any(re.match(rf"^\s*~ checkout offline: {re.escape(str(w.tmp / 'off'))}$", ln)
               for ln in lines), r.out
    # header per checkout with label and path
    marks = ("+", "-", "!", "~", "=")
    assert any("1" in ln and str(w.co) in ln and not ln.lstrip().startswith(marks)
               for ln in lines), r.out
    assert any("2" in ln and str(w.tmp / "off") in ln and not ln.lstrip().startswith("~")
               for ln in lines), r.out
    # NOOP (b.md) not shown without -v
    assert not any("b.md" in ln for ln in lines), r.out
    summ = [ln for ln in lines if SUMMARY_RE.match(ln)]
    assert len(summ) == 1, r.out
    g = SUMMARY_RE.match(summ[0]).groups()
    assert g[:5] == ("1", "0", "0", "1", "2"), summ
    assert g[6] == "1"
    rv = w.sync("--dry-run", "-v")
    assert any("b.md" in ln for ln in rv.out.splitlines()), rv.out


def test_cli_summary_in_sync_no_offline_suffix(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    # [U3]: a run with nothing to do is one line; -v prints the full report.
    assert w.sync().out.splitlines() == ["demo: in sync (1 checkout)"]
    # A finished run counts what it did ("0 created"); the plan's words are a dry run's.
    r = w.sync("--dry-run", "-v")
    s = [ln for ln in r.out.splitlines() if ln.startswith("memory:")]
    assert s and SUMMARY_RE.match(s[-1]) and "offline" not in s[-1]
    assert SUMMARY_RE.match(s[-1]).groups()[:5] == ("0", "0", "0", "1", "0")


def test_cli_no_colour_when_not_terminal_or_no_color(w):
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"])
    r = w.sync("--dry-run")
    assert "\x1b[" not in r.out + r.err


def _schema_common(doc, rc, outcome, dry):
    assert_schema(doc, rc)
    assert doc["outcome"] == outcome
    assert doc["dry_run"] is dry
    assert doc["project"] == "demo"
    s = doc["summary"]
    for act, key in [("CREATE", "create"), ("NOOP", "noop"), ("UNLINK", "unlink"),
                     ("CONFLICT", "conflict"), ("SKIP", "skip")]:
        if key == "unlink":
            n = len([o for o in doc["operations"] if o["action"] == act
                     and o.get("entry", "link") == "link"])
            assert s[key] in (n, len(ops(doc, act))), (key, s)
        else:
            assert s[key] == len(ops(doc, act)), (key, s)


def test_json_outcomes_applied_unchanged_planned(w):
    w.mem("a.md")
    w.mem("team/b.md")
    w.agent(memory=["a.md", "team/b.md"], paths=[str(w.co), str(w.tmp / "off")])
    _r, doc = w.jsync("--dry-run")
    _schema_common(doc, 0, "planned", True)
    assert doc["workspace"] == str(w.ws)
    assert {o["status"] for o in doc["operations"]} == {"planned"}
    assert doc["error"] is None and doc["segments"]["memory"]["success"] is True
    co = next(c for c in doc["checkouts"] if c["path"] == str(w.co))
    assert co == {**co, "label": "1", "state": "active"}
    o = op_for(doc, w.rt("a.md"))[0]
    assert o["checkout"] == str(w.co) and o["resource"] == "a.md" and o["source"] == w.src("a.md")
    _r, doc = w.jsync()
    _schema_common(doc, 0, "applied", False)
    assert {(o["action"], o["status"]) for o in doc["operations"]} == {
        ("CREATE", "applied"), ("SKIP", "skipped")}
    _r, doc = w.jsync()
    _schema_common(doc, 0, "unchanged", False)
    assert {(o["action"], o["status"]) for o in doc["operations"]} == {
        ("NOOP", "unchanged"), ("SKIP", "skipped")}


def test_json_outcome_blocked_statuses(w):
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"], paths=[str(w.co), str(w.tmp / "off")])
    r, doc = w.jsync()
    _schema_common(doc, 1, "blocked", False)
    assert {o["status"] for o in doc["operations"]} == {"not_applied"}
    assert doc["segments"]["memory"]["success"] is False
    # a blocked dry run: AMBIGUOUS whether statuses are "planned" (dry run rule) or
    # "not_applied" (blocked rule); we only require outcome/exit code.
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1 and doc["outcome"] == "blocked" and doc["dry_run"] is True


def test_json_outcome_config_error_and_usage_error(w):
    w.agent(raw="memory = [1]\n")
    r, doc = w.jsync()
    assert_schema(doc, 4)
    assert doc["outcome"] == "config_error" and doc["error"]["code"]
    r = w.sync("--json", "--no-such-flag")
    assert r.rc == 2
    assert not r.out.strip(), "usage errors print no JSON on stdout"
    assert r.err.strip()
    r = w.sync("--json", "--lock-timeout", "abc")
    assert r.rc == 2 and not r.out.strip()
    r = run(["--json-nope"], w.home)
    assert r.rc == 2


def test_check_exit_codes(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    r, doc = w.jsync("--check")
    assert r.rc == 7, r
    assert doc["outcome"] == "planned" and doc["exit_code"] == 7 and doc["dry_run"] is True
    assert not (w.co / ".agents").exists()
    assert w.sync().rc == 0
    r, doc = w.jsync("--check")
    assert r.rc == 0, r
    w.agent(memory=["a.md", "gone.md"])
    assert w.sync("--check").rc == 1
    w.agent(raw="memory = 3\n")
    assert w.sync("--check").rc == 4


def test_check_stale_unlink_is_a_pending_change(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    w.agent(memory=[])
    assert w.sync("--check").rc == 7


@pytest.mark.parametrize("damage", ["truncate", "edit", "version", "garbage", "empty"])
def test_apply_refuses_damaged_plan_files(w, damage):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    plan = save_plan(w)
    data = plan.read_bytes()
    if damage == "truncate":
        plan.write_bytes(data[: len(data) // 2])
    elif damage == "edit":
        text = data.decode()
        assert "a.md" in text
        plan.write_text(text.replace("a.md", "b.md"))
    elif damage == "version":
        text = data.decode()
        new = re.sub(r"(aikito\.plan/)(\d+)", lambda m: m.group(1) + "999", text)
        if new == text:
            new = re.sub(r"(version\s*=\s*)(\d+)", lambda m: m.group(1) + "999", text, count=1)
        assert new != text, "could not find a schema version to alter"
        plan.write_text(new)
    elif damage == "garbage":
        plan.write_bytes(b"\x00\xffnot a plan")
    else:
        plan.write_bytes(b"")
    r, doc = apply_plan(w, plan)
    assert r.rc == 4, r
    assert doc["outcome"] == "config_error" and doc["error"]["code"]
    assert not (w.co / ".agents").exists()


def test_apply_refuses_plan_for_another_workspace(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    plan = save_plan(w)
    other = make_workspace(w.tmp / "other")
    r = run(["--workspace", other, "apply", plan, "--json"], w.home)
    assert r.rc == 4, r
    assert r.json["outcome"] == "config_error"
    r = run(["apply", plan, "--json"], w.home, extra_env={"AIKITO_DIR": str(other)})
    assert r.rc == 4, r
    assert not (w.co / ".agents").exists()
    # the same workspace named explicitly is fine
    r = run(["apply", plan, "--json"], w.home, extra_env={"AIKITO_DIR": str(w.ws)})
    assert r.rc == 0, r


def test_apply_missing_plan_file(w):
    r = w.cli("apply", w.tmp / "nope.toml", "--json")
    assert r.rc in (2, 4), r


def test_name_omitted_uses_project_containing_cwd(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    sub = w.co / "src" / "pkg"
    sub.mkdir(parents=True)
    r = run(["--workspace", w.ws, "sync", "project", "--json", "--dry-run"], w.home, cwd=sub)
    assert r.rc == 0, r
    assert r.json["project"] == "demo"
    r = run(["--workspace", w.ws, "sync", "project", ".", "--json", "--dry-run"], w.home, cwd=sub)
    assert r.rc == 0 and r.json["project"] == "demo"
    r = run(["--workspace", w.ws, "sync", "project", "--json"], w.home, cwd=w.tmp)
    assert r.rc == 4 and r.json["outcome"] == "config_error"


def test_name_omitted_several_projects_is_config_error_listing_them(w):
    w.agent(memory=[])
    (w.ws / "projects" / "demo2").mkdir()
    (w.ws / "projects" / "demo2" / "agent.toml").write_text(f"paths = [{tq(str(w.co))}]\n")
    r = run(["--workspace", w.ws, "sync", "project", "--json"], w.home, cwd=w.co)
    assert r.rc == 4, r
    msg = r.json["error"]["message"]
    assert "demo" in msg and "demo2" in msg


def test_version(w):
    r = run(["--version"], w.home)
    assert r.rc == 0 and r.out.strip()


def test_json_config_error_reports_known_workspace(w):
    # AMBIGUOUS: §9 shows "workspace": "/abs/ws" in every document; when the workspace
    # was resolved and only agent.toml is broken, a careful reader expects it filled in.
    w.agent(raw="memory = 3\n")
    r, doc = w.jsync()
    assert r.rc == 4
    assert doc["workspace"] == str(w.ws), doc["workspace"]


def test_cli_no_colour_on_a_pty_with_NO_COLOR_or_no_color(w):
    import pty
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"])

    def on_pty(args, extra):
        master, slave = pty.openpty()
        p = subprocess.Popen([AIKITO, "--workspace", str(w.ws), *args], stdout=slave,
                             stderr=slave, env=clean_env(w.home, extra))
        os.close(slave)
        chunks = []
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:
                break
            if not b:
                break
            chunks.append(b)
        p.wait(timeout=10)
        os.close(master)
        return b"".join(chunks).decode("utf-8", "replace")

    out = on_pty(["sync", "project", "demo", "--dry-run"], {"NO_COLOR": "1"})
    assert "gone.md" in out and "\x1b[" not in out, repr(out)
    # SPEC §9: an explicit --color wins over the environment.
    out = on_pty(["sync", "project", "demo", "--dry-run", "--color"], {"NO_COLOR": "1"})
    assert "gone.md" in out and "\x1b[" in out, repr(out)
    out = on_pty(["sync", "project", "demo", "--dry-run", "--no-color"], {})
    assert "gone.md" in out and "\x1b[" not in out, repr(out)


def test_cli_text_errors_on_stderr_only(w):
    w.agent(raw="memory = 3\n")
    r = w.sync()
    assert r.rc == 4 and r.err.strip() and "memory" in r.err
    assert "memory" not in r.out


def test_usage_errors_exit_2(w):
    w.agent(memory=[])
    for args in (["sync", "project", "demo", "a", "b", "--json"],
                 ["sync", "project", "demo", "--out", w.tmp / "p.toml", "--json"],
                 ["sync", "project", "demo", "--lock-timeout", "-1", "--json"],
                 ["frobnicate"]):
        r = w.cli(*args)
        # AMBIGUOUS: `--out` without `--dry-run` — spec says "(with --dry-run)"; we expect a
        # usage error rather than a silent real sync.
        assert r.rc == 2, (args, r)
        assert not r.out.strip()
    assert not (w.tmp / "p.toml").exists()
