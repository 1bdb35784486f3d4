"""Shell completion (click's ``_AIKITO_COMPLETE``; README, "Shell completion").

- project names: the projects of the workspace found as every command finds it
  (``--workspace`` already on the command line, else ``AIKITO_DIR``, the pointer file,
  ``~/aikito``);
- the PATH of ``sync project NAME PATH``: the checkout paths NAME registers (``~``
  expanded), then the shell's own directory completion;
- a plan file: the shell's own file completion.

Completion runs on every <TAB>: it reads only the workspace's ``projects/`` listing and
one ``agent.toml``, writes nothing, and never fails loudly — any error completes nothing.
Imports only ``click`` at start-up (``click.shell_completion`` when completing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # pragma: no cover
    from click.shell_completion import CompletionItem


def _workspace_root(ctx: click.Context) -> str | None:
    from aikito_mem.config.discovery import resolve_workspace

    workspace = ctx.find_root().params.get("workspace")
    return resolve_workspace(workspace if isinstance(workspace, str) else None).root


def project_names(ctx: click.Context, param: click.Parameter | None,
                  incomplete: str) -> list[CompletionItem]:
    """The workspace's project names that start with ``incomplete``."""
    from click.shell_completion import CompletionItem

    try:
        from aikito_mem.config.projects import list_projects

        root = _workspace_root(ctx)
        if root is None:  # pragma: no cover - resolve_workspace raises instead
            return []
        return [CompletionItem(name) for name in list_projects(root)
                if name.startswith(incomplete)]
    except Exception:  # completion never fails loudly: complete nothing
        return []


def checkout_paths(ctx: click.Context, param: click.Parameter | None,
                   incomplete: str) -> list[CompletionItem]:
    """The checkout paths the project NAME registers, then directories."""
    from click.shell_completion import CompletionItem

    items: list[CompletionItem] = [CompletionItem(incomplete, type="dir")]
    name: Any = ctx.params.get("name")
    if not isinstance(name, str) or name in ("", "."):
        return items
    try:
        from aikito_mem.config.projects import load_project_config

        root = _workspace_root(ctx)
        if root is None:  # pragma: no cover - resolve_workspace raises instead
            return items
        config = load_project_config(root, name)
        seen: set[str] = set()
        for candidate in config.candidates:
            path = candidate.path
            if candidate.absolute and path.startswith(incomplete) and path not in seen:
                seen.add(path)
                items.append(CompletionItem(path))
    except Exception:  # completion never fails loudly: directories only
        return items[:1]
    return items


def files(ctx: click.Context, param: click.Parameter | None,
          incomplete: str) -> list[CompletionItem]:
    """The shell's own file-name completion (a plan file)."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]
