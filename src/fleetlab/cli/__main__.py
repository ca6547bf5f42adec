"""``python -m fleetlab.cli``: the same as the ``fleetlab`` command."""

import sys

from . import main

sys.exit(main())
