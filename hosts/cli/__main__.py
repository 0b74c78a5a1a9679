"""``python -m hosts.cli``: the command line, as hook commands of earlier versions run it."""

import sys

from hosts.cli.command import main

if __name__ == "__main__":
    sys.exit(main())
