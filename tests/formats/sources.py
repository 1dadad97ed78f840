"""The chat-app export samples of tests/formats/fixtures/sources, and zips made of them."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

SOURCES = Path(__file__).parent / "fixtures" / "sources"


def sample(name: str) -> Any:
    """A parsed sample file."""
    return json.loads((SOURCES / name).read_text())


def zipped(folder: str, *, extra: dict[str, bytes] | None = None, prefix: str = "") -> bytes:
    """The sample export folder as the zip its app gives, with extra members added."""
    buffer = io.BytesIO()
    root = SOURCES / folder
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, prefix + path.relative_to(root).as_posix())
        for name, content in (extra or {}).items():
            archive.writestr(name, content)
    return buffer.getvalue()
