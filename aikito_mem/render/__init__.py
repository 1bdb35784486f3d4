"""The render room: reports as text and as the documented JSON documents.

- :mod:`~aikito_mem.render.text` — rules every command shares: printable names, colour,
  what a stream can encode, the JSON text, the :class:`Output` value;
- :mod:`~aikito_mem.render.sync` — sync reports as printed (the one line of a run with
  nothing to do), :mod:`~aikito_mem.render.sync_plan` — a plan and its statuses as text
  lines, :mod:`~aikito_mem.render.sync_json` — the ``aikito.sync/2`` document;
- :mod:`~aikito_mem.render.status` — the status report (``aikito.status/1``);
- :mod:`~aikito_mem.render.doctor` — the doctor report (``aikito.doctor/1``);
- :mod:`~aikito_mem.render.adopt` — the adopt report (``aikito.adopt/1``);
- :mod:`~aikito_mem.render.init` — the init report (``aikito.init/1``);
- :mod:`~aikito_mem.render.sync_all` — ``aikito sync`` of every project;
- :mod:`~aikito_mem.render.hook` — ``aikito hook install|uninstall``.

Pure: values in, strings and dicts out.  Never imported by ``aikito --version``.  The
names of the sync document and of a plan's text are imported on first use (PEP 562): an
in-sync run prints one line and needs neither ([§12]).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aikito_mem.render.text import Display, Output, json_text, printable

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.render.sync_json import SCHEMA, json_document
    from aikito_mem.render.sync_plan import summary_line, text_report

_LAZY = {
    "SCHEMA": "aikito_mem.render.sync_json",
    "json_document": "aikito_mem.render.sync_json",
    "summary_line": "aikito_mem.render.sync_plan",
    "text_report": "aikito_mem.render.sync_plan",
}

__all__ = [
    "SCHEMA",
    "Display",
    "Output",
    "json_document",
    "json_text",
    "printable",
    "summary_line",
    "text_report",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
