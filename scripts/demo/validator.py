"""The demo's independent validator: conformance.validator, with evidence.json beside it.

$DEMO_EVIDENCE names another evidence file.
"""

import sys
from pathlib import Path

from conformance.validator import main

if __name__ == "__main__":
    sys.exit(main(Path(__file__).with_name("evidence.json")))
