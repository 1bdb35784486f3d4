"""The writer's one check of a plan's checkouts ([E9]), shared by the sync's guard
(:mod:`aikito_mem.executor.guard`) and the clean's (:mod:`aikito_mem.executor.guard_clean`).

Where a plan may write is derived from the live world, never from the plan: the active
checkouts the live ``agent.toml`` lists, or the one checkout named explicitly (for
``aikito clean PATH``, that one directory) — never a place [H1] refuses.
:func:`checkout_refusals` then refuses a plan that lists an active checkout twice or one
outside those, :func:`foreign_checkout` an operation of no active checkout of the plan
or outside its checkout, and :func:`removal_refusal` a removal of anything but a link
(or a pruned directory) — the checks both guards make first, written once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from aikito_mem.errors import ConfigError
from aikito_mem.model import CheckoutState, Kind, Observed, Plan, ProjectConfig

if TYPE_CHECKING:
    from aikito_mem.world.git import WorktreeAnswers

__all__ = ["allowed_checkouts", "checkout_refusals", "clean_checkouts", "foreign_checkout",
           "live_config", "removal_refusal"]


def live_config(plan: Plan, environ: Mapping[str, str] | None, known: ProjectConfig | None,
                known_home: str | None) -> tuple[ProjectConfig, str | None]:
    """The configuration of the live ``agent.toml`` bytes, and the home directory ``~``
    is expanded with: the home of the run's environment ([H5]).  ``known`` (the engine's
    own parse, with the ``known_home`` it expanded ``~`` with) is re-used only when the
    live bytes are exactly its bytes — compared byte for byte, never by anything the
    plan claims ([P6]) — and it was parsed with that same home."""
    from aikito_mem.config.agent_toml import parse_project_config
    from aikito_mem.config.discovery import home_directory
    from aikito_mem.config.projects import read_config_bytes

    data, project_dir, config_path = read_config_bytes(plan.workspace, plan.project)
    home = home_directory(environ)
    if (known is not None and (known_home or "") == (home or "")
            and known.config_path == config_path and known.data == data):
        return known, home
    return parse_project_config(data, name=plan.project, project_dir=project_dir,
                                config_path=config_path, home=home or ""), home


def allowed_checkouts(plan: Plan, config: ProjectConfig, home: str | None,
                      worktrees: WorktreeAnswers | None = None) -> tuple[set[str], str]:
    """Physical paths a write may go to, and how they were found (for messages): never a
    place [H1] refuses, whatever the plan says.

    ``worktrees`` ([L6]): git's answers of the call that made ``plan``; re-used only when
    they were bound to this very plan object and the checkouts they give are exactly the
    active ones the plan records — otherwise git is asked afresh.  Every other check
    ([H1] included) is made from the live world either way."""
    from aikito_mem.world import checkouts as _checkouts
    from aikito_mem.world.observe import Observer

    answers = worktrees.for_plan(plan) if worktrees is not None else None
    if plan.explicit_path is not None:
        slot, _ = _checkouts.explicit_slot(config, plan.explicit_path, Observer(),
                                           home=home or "", worktrees=answers)
        return {slot.path}, f"the checkout named explicitly ({plan.explicit_path})"

    def active(known: WorktreeAnswers | None) -> set[str]:
        return {s.path for s in _checkouts.slots(config, Observer(), home=home or "",
                                                 worktrees=known)
                if s.state is CheckoutState.ACTIVE}

    found = active(answers)
    if answers is not None and found != {co.path for co in plan.checkouts
                                         if co.state is CheckoutState.ACTIVE}:
        found = active(None)
    return found, f"the active checkouts {config.config_path} lists"


def clean_checkouts(plan: Plan, environ: Mapping[str, str] | None
                    ) -> tuple[set[str], str] | str:
    """Where a clean plan may write ([L3]): the active checkouts the live ``agent.toml``
    lists (or the one named), or for ``clean PATH`` that one checkout — and how they
    were found; a message when they cannot be known."""
    try:
        if plan.project:
            config, home = live_config(plan, environ, None, None)
            return allowed_checkouts(plan, config, home)
        if plan.explicit_path is None:
            return set(), "a checkout named explicitly (the plan names none)"
        from aikito_mem.world.clean import path_slot
        from aikito_mem.world.observe import Observer

        slot = path_slot(plan.explicit_path, plan.workspace, Observer())
        return {slot.path}, f"the checkout named explicitly ({plan.explicit_path})"
    except ConfigError as exc:
        return f"the checkouts of the clean cannot be checked: {exc.message}"


def checkout_refusals(plan: Plan, allowed: set[str], how: str, *, verb: str
                      ) -> tuple[set[str], list[str]]:
    """(the plan's active checkouts, the refusals of its checkouts): each active
    checkout listed once, each one of ``allowed`` (found ``how``); ``verb`` says what
    aikito may do there ("write to", "clean")."""
    active: set[str] = set()
    refusals: list[str] = []
    for co in plan.checkouts:
        if co.state is not CheckoutState.ACTIVE:
            continue
        if co.path in active:
            refusals.append(f"the plan lists checkout {co.path} twice; expected each "
                            "checkout once")
        active.add(co.path)
        if co.path not in allowed:
            listing = ", ".join(sorted(allowed)) or "none"
            refusals.append(f"checkout {co.path} is not one aikito may {verb}: expected "
                            f"one of {how} ({listing})")
    return active, refusals


def foreign_checkout(checkout: str, active: set[str], target: str | None = None
                     ) -> str | None:
    """Why an operation of ``checkout`` is refused when it is no active checkout of the
    plan, or its ``target`` lies outside that checkout (the words after the operation),
    else ``None``."""
    if checkout not in active:
        return f" is for checkout {checkout!r}, which is not an active checkout of the plan"
    if target is not None and not target.startswith(checkout + "/"):
        return f" is outside checkout {checkout}; expected a path inside it"
    return None


def removal_refusal(entry: str, observed: Observed) -> str | None:
    """Why an UNLINK that is no pruned directory is refused before its segment's own
    ownership rule: it removes something else than a link, or what the plan recorded
    there is not a link (the words after the operation), else ``None``."""
    if entry != "link":
        return f" removes a {entry!r}; expected a link or a pruned directory"
    if observed.kind is not Kind.LINK or observed.literal is None:
        return f" removes {observed.describe()}; aikito only unlinks its own links"
    return None
