"""``python -m autoacct``: the ``autoacct`` command (:func:`autoacct.cli.main`)."""

import sys

from autoacct.cli import main

if __name__ == "__main__":
    sys.exit(main())
