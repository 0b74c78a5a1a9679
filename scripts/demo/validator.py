"""The demo's independent validator: conformance.validator, with evidence.json beside it.

$DEMO_EVIDENCE names another evidence file.
"""

import os
import sys

from conformance.validator import main

if __name__ == "__main__":
    sys.exit(main(os.path.join(os.path.dirname(os.path.abspath(__file__)), "evidence.json")))
