"""The render room: reports as text and as the documented JSON documents.

- :mod:`~aikito_mem.render.text` — rules every command shares: printable names, colour,
  what a stream can encode, the JSON text, the :class:`Output` value;
- :mod:`~aikito_mem.render.sync` — plans, results and sync reports (``aikito.sync/2``);
- :mod:`~aikito_mem.render.status` — the status report (``aikito.status/1``);
- :mod:`~aikito_mem.render.doctor` — the doctor report (``aikito.doctor/1``);
- :mod:`~aikito_mem.render.adopt` — the adopt report (``aikito.adopt/1``);
- :mod:`~aikito_mem.render.init` — the init report (``aikito.init/1``);
- :mod:`~aikito_mem.render.sync_all` — ``aikito sync`` of every project;
- :mod:`~aikito_mem.render.hook` — ``aikito hook install|uninstall``.

Pure: values in, strings and dicts out.  Never imported by ``aikito --version``.
"""

from __future__ import annotations

from aikito_mem.render.sync import SCHEMA, json_document, summary_line, text_report
from aikito_mem.render.text import Display, Output, json_text, printable

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
