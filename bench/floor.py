"""Syscall floor: the least filesystem work that can do the same job as a sync.

Usage:  python bench/floor.py {cold,warm,dry} MANIFEST

This is the "minimal script doing only the unavoidable syscalls" of SPEC §12. It is run
by the same interpreter as ``aikito`` so that the difference between the two is what the
engine does on top of the bare job: configuration parsing, validation, planning,
verification, locking, rendering.

It deliberately imports nothing but ``os`` and ``sys`` and does no TOML parsing: the
harness writes the job as a plain manifest (one read, like reading ``agent.toml``):

    W <workspace root>            the physical workspace root
    N <notes source>              optional: the project notes directory
    A <checkout>                  an active checkout (exists, is a directory)
    O <checkout>                  an offline checkout (does not exist)
    R <ref>                       a memory reference, relative to <workspace>/memory
    L <source> <target>           W1+segments: a skill or instruction link, the target
                                  relative to each active checkout
    I <file>                      W1+segments: the instruction source, read once (is it
                                  empty?)

Per mode, the syscalls made are exactly:

cold  (fresh checkouts: create everything)
    per resource, once:          lstat(source)              is it there at all?
    per checkout:                stat(checkout)             active or offline
    per active checkout:         mkdir(.agents), mkdir(.agents/memory),
                                 mkdir(each intermediate directory of nested refs, once)
    per resource and checkout:   symlink(source, target)    no-clobber create
    L lines, per active checkout: mkdir(each missing parent, once), symlink(source, target)
warm  (already in sync: prove it)
    per resource, once:          lstat(source)
    per checkout:                stat(checkout)
    per resource and checkout:   readlink(target)           compared with the source
                                 (L lines alike)
dry   (plan only, nothing written)
    per resource, once:          lstat(source)
    per checkout:                stat(checkout)
    per active checkout:         lstat(.agents/memory); if it is absent every target
                                 is known to be missing, otherwise readlink(target)
                                 per resource; per L line readlink(target)
    (every mode: one lstat per L source, one open + read + close per I file)

What it does NOT do (and a real engine must): safety checks of each path component,
identity capture, locking, re-verification before writing, stale-link detection,
output. It is a lower bound, not a competitor. Exit status: 0 when the job is done
(warm: every link matched), 1 otherwise.
"""

import os
import sys


def main() -> int:
    mode, manifest = sys.argv[1], sys.argv[2]
    with open(manifest, encoding="utf-8") as fh:  # open + read + close
        lines = fh.read().splitlines()

    ws = ""
    notes = ""
    active: list[str] = []
    offline: list[str] = []
    refs: list[str] = []
    links: list[tuple[str, str]] = []  # (relative target, source)
    instructions: list[str] = []
    for line in lines:
        kind, _, value = line.partition(" ")
        if kind == "W":
            ws = value
        elif kind == "N":
            notes = value
        elif kind == "A":
            active.append(value)
        elif kind == "O":
            offline.append(value)
        elif kind == "R":
            refs.append(value)
        elif kind == "L":
            source, _, target = value.rpartition(" ")
            links.append((target, source))
        elif kind == "I":
            instructions.append(value)

    # (relative target, canonical source) for every resource, notes included.
    mem = ws + "/memory/"
    resources = [(ref, mem + ref) for ref in refs]
    if notes:
        resources.append(("notes", notes))

    # One lstat per source: a missing source would be a conflict.
    for _, source in resources + links:
        os.lstat(source)
    for path in instructions:  # an empty instruction source means "no link"
        with open(path, "rb") as fh:
            if not fh.read().strip():
                return 1

    # One stat per checkout decides active/offline (offline ones cost nothing more).
    for co in offline:
        try:
            os.stat(co)
        except FileNotFoundError:
            pass
        else:
            return 1
    for co in active:
        os.stat(co)

    # Intermediate directories for nested targets, parents before children, each once.
    parents = sorted(
        {ref.rsplit("/", 1)[0] for ref, _ in resources if "/" in ref},
        key=lambda p: p.count("/"),
    )
    intermediates: list[str] = []
    for p in parents:
        parts = p.split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            if sub not in intermediates:
                intermediates.append(sub)

    # Parents of the L targets that a fresh checkout lacks (.agents exists by then).
    link_parents: list[str] = []
    for target, _ in links:
        parts = target.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            if sub != ".agents" and sub not in link_parents:
                link_parents.append(sub)

    bad = 0
    for co in active:
        top = co + "/.agents/memory/"
        if mode == "cold":
            os.mkdir(co + "/.agents")
            os.mkdir(top)
            for sub in intermediates:
                os.mkdir(top + sub)
            for target, source in resources:
                os.symlink(source, top + target)  # fails on an existing entry
            for sub in link_parents:
                os.mkdir(co + "/" + sub)
            for target, source in links:
                os.symlink(source, co + "/" + target)
        elif mode == "warm":
            for target, source in resources:
                if os.readlink(top + target) != source:
                    bad += 1
            for target, source in links:
                if os.readlink(co + "/" + target) != source:
                    bad += 1
        else:  # dry
            for target, source in links:
                try:
                    if os.readlink(co + "/" + target) != source:
                        bad += 1
                except FileNotFoundError:
                    pass
            try:
                os.lstat(top)
            except FileNotFoundError:
                continue  # nothing exists yet: every target is a CREATE
            for target, source in resources:
                try:
                    if os.readlink(top + target) != source:
                        bad += 1
                except FileNotFoundError:
                    pass
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
