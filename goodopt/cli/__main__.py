"""``python -m goodopt.cli``."""

import sys

from . import console

sys.exit(console())
