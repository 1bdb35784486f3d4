"""Help that fits the width ([U2]): click's help formatter, whose preserved paragraphs
fit too.  Loaded only when a help or a usage line is written ([§12]): a command that runs
never formats one.
"""

from __future__ import annotations

import click


def fitted(line: str, width: int) -> list[str]:
    """[U2]: one help line within ``width``: as it is when it fits, else wrapped at its
    spaces, each further line indented to the column its description starts at (after
    the first run of two spaces: ``aikito sync --check   exit 7 when…``) — or, when
    that column leaves the description under 20 columns, the description on lines of
    its own four deeper than the term; without a description, four deeper than the
    line.  A word wider than the line stands whole on its own."""
    if len(line) <= width:
        return [line]
    import re
    import textwrap

    lead = len(line) - len(line.lstrip(" "))
    column = re.match(r" *\S+(?: \S+)*?  +(?=\S)", line)
    wrapper = textwrap.TextWrapper(width, break_long_words=False, break_on_hyphens=False)
    if column is not None and column.end() > width - 20:
        # No room for the description beside its term: it goes below, four deeper.
        below = " " * (lead + 4)
        wrapper.initial_indent = wrapper.subsequent_indent = below
        return [*fitted(line[:column.end()].rstrip(), width),
                *wrapper.wrap(line[column.end():])]
    wrapper.subsequent_indent = " " * (column.end() if column is not None else lead + 4)
    return wrapper.wrap(line) or [line]


class FittedFormatter(click.HelpFormatter):
    """click's help formatter, whose preserved (``\\b``) paragraphs — the examples, the
    exit codes, the arguments — fit the width too (:func:`fitted`); click wraps the rest.
    Its width is the output's, ``fit`` ([U2], at most
    :data:`~aikito_mem.cli.options.HELP_WIDTH`; click itself keeps two columns free), so
    a help that fits 100 columns prints as it always did."""

    def __init__(self, width: int | None, max_width: int | None, *, fit: int) -> None:
        super().__init__(width=width, max_width=max_width)
        self.fit = fit

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        wrapped = click.wrap_text(text, self.width, initial_indent=indent,
                                  subsequent_indent=indent, preserve_paragraphs=True)
        width = min(self.fit, self.width + 2)
        self.write("\n".join(part for line in wrapped.splitlines()
                             for part in fitted(line, width)))
        self.write("\n")
