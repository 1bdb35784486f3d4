"""``python -m aikito_mem`` is the ``aikito`` command."""

from aikito_mem.console import main

main()
