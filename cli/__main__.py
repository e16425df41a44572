"""`python -m cli`: the `rooflens` command without its console script."""

import sys

from cli import main

sys.exit(main())
