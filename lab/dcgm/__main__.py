"""``python3 -m lab.dcgm ARGS``: run the DCGM shim (see ``lab/dcgm/cli.py``)."""

import sys

from lab.dcgm import cli

sys.exit(cli.main(sys.argv[1:]))
