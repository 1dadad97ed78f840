"""Zip exports read safely: which app made them, their conversation files, and their assets.

Nothing is extracted to disk; members are read through capped streams. An archive is refused
whole (before anything is read) when a member name tries a path trick (absolute, `..`,
backslashes, drive letters, NUL), is a symlink, is encrypted or appears twice, or when the
sizes it declares add up past the limit, or a large member inflates more than the ratio allows
(zip bombs): Python's reader never yields more than
a member declares, so the declared total bounds what an import can inflate to.
"""

from __future__ import annotations

import base64
import mimetypes
import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, BinaryIO

from transcripts.errors import BodyTooLarge, FormatError, InvalidInput

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_SPLIT = re.compile(r"^conversations(?:-(\d+))?\.json$")
_DRIVE = re.compile(r"^[A-Za-z]:")
_SYMLINK = 0o120000
# What a damaged member raises while it is inflated.
DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, OSError)


@dataclass(frozen=True)
class ZipLimits:
    """How much an archive may hold once inflated."""

    members: int = 100_000
    total_bytes: int = 4 << 30
    asset_bytes: int = 10 << 20
    # A member over ratio_floor bytes may inflate at most ratio times its compressed size.
    ratio: int = 200
    ratio_floor: int = 1 << 20
    # Per conversation: the bytes of files inlined (each reference counts), and how often
    # one file may be inlined.
    conversation_asset_bytes: int = 64 << 20
    references: int = 10


@dataclass(frozen=True)
class Asset:
    """A file of the archive, inlined as a data URL."""

    name: str
    mime_type: str
    url: str
    size: int


def is_zip(head: bytes) -> bool:
    """Whether a file starting with head is a zip archive."""
    return head.startswith(ZIP_MAGIC)


class Archive:
    """A checked zip archive of a chat-app export."""

    def __init__(self, fp: BinaryIO, limits: ZipLimits) -> None:
        self.limits = limits
        try:
            self.zip = zipfile.ZipFile(fp)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as error:
            raise FormatError([("$", f"not a readable zip archive: {error}")]) from None
        self.members = _checked_members(self.zip, limits)
        self.files = {info.filename: info for info in self.members if not info.is_dir()}
        self.root = _export_root(list(self.files))
        self._inlined: dict[str, Asset] = {}
        self._references: dict[str, int] = {}
        self._inlined_bytes = 0

    def new_conversation(self) -> None:
        """Start counting the files the next conversation inlines (and forget the last's)."""
        self._inlined.clear()
        self._references.clear()
        self._inlined_bytes = 0

    def names_under(self, folder: str) -> list[str]:
        """Member names inside folder (relative to the export's root), sorted."""
        prefix = f"{self.root}{folder.rstrip('/')}/"
        return sorted(name for name in self.files if name.startswith(prefix))

    def at_root(self, name: str) -> str | None:
        """The member name of a file at the export's root, when present."""
        full = f"{self.root}{name}"
        return full if full in self.files else None

    def conversation_files(self) -> list[str]:
        """`conversations.json`, or every `conversations-NNN.json` split in number order."""
        found = []
        for name in self.files:
            if not name.startswith(self.root) or "/" in name[len(self.root) :]:
                continue
            match = _SPLIT.match(name[len(self.root) :])
            if match:
                found.append((int(match.group(1) or -1), name))
        return [name for _, name in sorted(found)]

    @contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        """A stream of one member (never more than it declares: the total was checked); a
        damaged member raises FormatError naming it."""
        try:
            with self.zip.open(self.files[name]) as stream:
                yield stream
        except DAMAGED as error:
            raise FormatError([(name, f"unreadable in the zip: {error}")]) from None

    def read(self, name: str) -> bytes:
        """A whole member."""
        with self.open(name) as stream:
            return _read_checked(stream, name)

    def find_asset(self, asset_id: str) -> str | None:
        """The member an asset id names: its exact name, or the first whose name starts with
        the id followed by `-`, `_` or `.` (ChatGPT keeps the original name after the id)."""
        best: str | None = None
        for name in self.files:
            base = PurePosixPath(name).name
            if base == asset_id:
                return name
            if (
                base.startswith(asset_id)
                and base[len(asset_id) : len(asset_id) + 1] in ("-", "_", ".")
                and (best is None or name < best)
            ):
                best = name
        return best

    def asset(self, name: str, mime_hint: str | None = None) -> Asset | str:
        """The member as a data URL, or why it is not inlined (too large, unreadable); read
        once per conversation. Refused (InvalidInput / BodyTooLarge naming the limit) when
        the conversation inlines one file too often or too many bytes in all."""
        self._references[name] = count = self._references.get(name, 0) + 1
        if count > self.limits.references:
            raise InvalidInput(
                f"a conversation refers to {name} more than {self.limits.references} times",
                maxReferences=self.limits.references,
                limit="TRANSCRIPTS_MAX_IMPORT_FILE_REFERENCES",
            )
        found = self._inlined.get(name) or self._read_asset(name, mime_hint)
        if isinstance(found, Asset):
            self._inlined[name] = found
            self._inlined_bytes += found.size
            if self._inlined_bytes > self.limits.conversation_asset_bytes:
                raise BodyTooLarge(
                    "a conversation inlines more than "
                    f"{self.limits.conversation_asset_bytes} bytes of files",
                    maxBytes=self.limits.conversation_asset_bytes,
                    limit="TRANSCRIPTS_MAX_CONVERSATION_FILE_BYTES",
                )
        return found

    def _read_asset(self, name: str, mime_hint: str | None) -> Asset | str:
        info = self.files[name]
        if info.file_size > self.limits.asset_bytes:
            return (
                f"{info.file_size} bytes, more than the {self.limits.asset_bytes} "
                "an inlined file may have"
            )
        guessed = mimetypes.guess_type(PurePosixPath(name).name)[0]
        mime = guessed or (mime_hint if mime_hint and "/" in mime_hint else None)
        mime = mime or "application/octet-stream"
        try:
            data = self.read(name)
        except FormatError as error:
            return str(error)
        url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        return Asset(PurePosixPath(name).name, mime, url, len(data))


def detect_zip_source(archive: Archive) -> str | None:
    """Which app's export the archive is: chatgpt, claude-ai, or None (a single JSON file
    or nothing known)."""
    files = archive.conversation_files()
    if not files:
        return None
    with archive.open(files[0]) as stream:
        head = stream.read(65536)
    if b'"chat_messages"' in head:
        return "claude-ai"
    if b'"mapping"' in head:
        return "chatgpt"
    if archive.at_root("users.json") or archive.at_root("projects.json"):
        return "claude-ai"
    return "chatgpt"


def single_document(archive: Archive) -> str | None:
    """The one JSON file of an archive that holds nothing else of note (a zipped export)."""
    documents = [
        name
        for name in archive.files
        if name.lower().endswith(".json") and not name.startswith("__MACOSX/")
    ]
    return documents[0] if len(documents) == 1 else None


def _read_checked(stream: IO[bytes], name: str) -> bytes:
    try:
        return stream.read()
    except DAMAGED as error:
        raise FormatError([(name, f"unreadable in the zip: {error}")]) from None


def _checked_members(archive: zipfile.ZipFile, limits: ZipLimits) -> list[zipfile.ZipInfo]:
    members = archive.infolist()
    if len(members) > limits.members:
        raise BodyTooLarge(
            f"the zip holds {len(members)} files, more than {limits.members}",
            maxMembers=limits.members,
            limit="TRANSCRIPTS_MAX_ZIP_MEMBERS",
        )
    problems: list[tuple[str, str]] = []
    seen: set[str] = set()
    total = 0
    for info in members:
        name = info.filename
        reason = _unsafe_name(name)
        if reason is None and (info.external_attr >> 16) & 0o170000 == _SYMLINK:
            reason = "is a symbolic link"
        if reason is None and info.flag_bits & 0x1:
            reason = "is encrypted"
        if reason is None and name in seen:
            reason = "appears twice"
        if reason is not None:
            problems.append((name[:200], f"refused: the member name {reason}"))
        seen.add(name)
        total += info.file_size
    if problems:
        raise FormatError(problems)
    if total > limits.total_bytes:
        raise BodyTooLarge(
            f"the zip inflates to {total} bytes, more than the {limits.total_bytes} allowed",
            maxBytes=limits.total_bytes,
            limit="TRANSCRIPTS_MAX_UNZIPPED_BYTES",
        )
    for info in members:
        _check_ratio(info, limits)
    return members


def _check_ratio(info: zipfile.ZipInfo, limits: ZipLimits) -> None:
    """Refuse a large member that inflates more than the ratio allows (a zip bomb)."""
    if info.file_size <= limits.ratio_floor:
        return
    if info.file_size > limits.ratio * max(info.compress_size, 1):
        raise InvalidInput(
            f"{info.filename[:200]} inflates from {info.compress_size} to {info.file_size} "
            f"bytes, more than {limits.ratio} times",
            maxRatio=limits.ratio,
            limit="TRANSCRIPTS_MAX_ZIP_RATIO",
        )


def _unsafe_name(name: str) -> str | None:
    if not name or "\x00" in name:
        return "is empty or holds a NUL character"
    if "\\" in name:
        return "holds a backslash"
    if name.startswith("/") or _DRIVE.match(name):
        return "is an absolute path"
    if any(part == ".." for part in name.split("/")):
        return "climbs out of the archive (..)"
    return None


def _export_root(names: list[str]) -> str:
    """The folder the export sits in: "" for files at the top, else the one folder holding
    the conversations file (an export zipped again from its unpacked folder)."""
    candidates = sorted(
        (name.count("/"), name.rsplit("/", 1)[0] + "/" if "/" in name else "")
        for name in names
        if _SPLIT.match(PurePosixPath(name).name) and not name.startswith("__MACOSX/")
    )
    return candidates[0][1] if candidates else ""


def textdoc_members(archive: Archive) -> dict[str, str]:
    """Canvas documents (`textdocs/<textdoc id>…`) by their file name."""
    return {PurePosixPath(name).name: name for name in archive.names_under("textdocs")}
