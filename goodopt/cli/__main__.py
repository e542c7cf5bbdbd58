"""``python -m goodopt.cli``."""

import sys

from . import main

sys.exit(main())
