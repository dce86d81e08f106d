"""`python -m tileir.interpret SCRIPT.py [ARGS]`: see `tileir.interpret.cli`."""

import sys

from tileir.interpret.cli import main

sys.exit(main())
