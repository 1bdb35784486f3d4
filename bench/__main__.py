"""``python -m bench``: run the benchmark (see :mod:`bench.cli`)."""

import sys

from bench.cli import main

sys.exit(main())
