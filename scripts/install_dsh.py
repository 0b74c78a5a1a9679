"""Install DSH 0.1.0-rc.8 with npm: ``python3 scripts/install_dsh.py PREFIX NPM...``.

npm's own peer resolution does not finish on this release's tree: it backtracks for
tens of minutes and gigabytes over the React peer ranges of DSH's web packages. So
the tree is installed without peers first (``--legacy-peer-deps``), then the peers it
still lacks are installed by the ranges that asked for them, until none is missing
(one round, as the registry stands). ``dsh --version`` must run at the end, or this
exits 1 saying so.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = "@deepseek-ai/dsh@0.1.0-rc.8"
UNMET = re.compile(r"UNMET DEPENDENCY (\S.*?)\s*$")


def main(prefix: Path, npm: list[str]) -> int:
    prefix.mkdir(parents=True, exist_ok=True)
    install = [*npm, "install", "--silent", "--legacy-peer-deps", "--prefix", str(prefix)]
    subprocess.run([*install, PACKAGE], check=True)
    for round_ in range(1, 6):
        listing = subprocess.run(
            [*npm, "ls", "--all"], cwd=prefix, capture_output=True, text=True, check=False
        ).stdout
        missing = sorted({m.group(1) for line in listing.splitlines() if (m := UNMET.search(line))})
        if not missing:
            break
        print(f"dsh: installing {len(missing)} missing peer packages (round {round_})")
        subprocess.run([*install, PACKAGE, *missing], check=True)
    dsh = prefix / "node_modules" / ".bin" / "dsh"
    if subprocess.run([str(dsh), "--version"], capture_output=True, check=False).returncode:
        print(f"dsh: {dsh} --version failed after the install; remove {prefix} and retry")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
