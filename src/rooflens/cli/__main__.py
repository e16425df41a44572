"""`python -m rooflens.cli`: the `rooflens` command without its console script."""

import sys

from rooflens.cli import main

sys.exit(main())
