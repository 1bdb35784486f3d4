"""``python -m aikito_mem`` is the ``aikito`` command."""

from aikito_mem.cli import main

main()
