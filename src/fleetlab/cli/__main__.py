"""``python -m fleetlab.cli``: the same as the ``fleetlab`` command."""

import sys

from fleetlab.cli import main

sys.exit(main())
