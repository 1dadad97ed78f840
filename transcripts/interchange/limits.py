"""The limits every import keeps, read from the settings (documented in
docs/import-export.md): JSON depth and string length, zip sizes and ratios, files inlined, the
size of a document read whole and of one message, and the memory an import job may take."""

from __future__ import annotations

import json
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
from django.conf import settings

from transcripts.errors import BodyTooLarge, InvalidInput
from transcripts.formats import TreeThread
from transcripts.formats.sources import JsonLimits, document_too_large
from transcripts.formats.zips import ZipLimits
from transcripts.jsonvalue import native_json_allowed

_MB = 1 << 20


def _setting(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def json_limits() -> JsonLimits:
    """How deeply an imported file may nest, and how long one of its strings may be."""
    defaults = JsonLimits()
    return JsonLimits(
        depth=_setting("TRANSCRIPTS_MAX_JSON_DEPTH", defaults.depth),
        string_bytes=_setting("TRANSCRIPTS_MAX_IMPORT_STRING_BYTES", defaults.string_bytes),
        document_bytes=_setting("TRANSCRIPTS_MAX_IMPORT_DOCUMENT_BYTES", defaults.document_bytes),
        item_bytes=_setting("TRANSCRIPTS_MAX_IMPORT_ITEM_BYTES", defaults.item_bytes),
    )


def zip_limits() -> ZipLimits:
    """The limits an export zip must keep."""
    defaults = ZipLimits()
    return ZipLimits(
        members=_setting("TRANSCRIPTS_MAX_ZIP_MEMBERS", defaults.members),
        total_bytes=_setting("TRANSCRIPTS_MAX_UNZIPPED_BYTES", defaults.total_bytes),
        asset_bytes=_setting("TRANSCRIPTS_MAX_IMPORT_ASSET_BYTES", defaults.asset_bytes),
        ratio=_setting("TRANSCRIPTS_MAX_ZIP_RATIO", defaults.ratio),
        conversation_asset_bytes=_setting(
            "TRANSCRIPTS_MAX_CONVERSATION_FILE_BYTES", defaults.conversation_asset_bytes
        ),
        references=_setting("TRANSCRIPTS_MAX_IMPORT_FILE_REFERENCES", defaults.references),
    )


def check_document_size(size: int) -> None:
    """Refuse a document too large to be read whole (formats that do not stream)."""
    limit = json_limits().document_bytes
    if size > limit:
        raise document_too_large(limit, str(size))


def check_messages(tree: TreeThread) -> None:
    """Refuse a thread holding a message larger than one message may be, as stored."""
    limit = _setting("TRANSCRIPTS_MAX_IMPORT_MESSAGE_BYTES", 64 * _MB)
    native = native_json_allowed()
    for index, message in enumerate(tree.messages):
        try:
            # orjson's UTF-8 is at least a third of json's text (NaN is "null" there), so a
            # message this short is under the limit without the slower count.
            if native and len(orjson.dumps(message, default=str)) * 3 <= limit:
                continue
        except TypeError:  # orjson's: non-string keys, integers past 64 bits, lone surrogates
            pass
        size = len(json.dumps(message, ensure_ascii=False, default=str))
        if size > limit:
            raise BodyTooLarge(
                f"message {index} has {size} bytes of JSON, more than the {limit} "
                "one message may have",
                maxBytes=limit,
                limit="TRANSCRIPTS_MAX_IMPORT_MESSAGE_BYTES",
            )


def job_memory_bytes() -> int:
    """How much memory (address space) one import job may add to its worker."""
    return _setting("TRANSCRIPTS_IMPORT_JOB_MEMORY_MB", 1024) * _MB


@contextmanager
def memory_cap(budget: int) -> Iterator[None]:
    """Cap this process's address space at what it uses now plus budget while the block
    runs (a MemoryError, not the machine's OOM killer, ends an import that needs more), and
    lift the cap after. Without /proc (not Linux) the block runs uncapped."""
    statm = Path("/proc/self/statm")
    if not statm.exists():
        yield
        return
    used = int(statm.read_text().split()[0]) * resource.getpagesize()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = used + budget
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft != resource.RLIM_INFINITY:
        cap = min(cap, soft)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def too_much_memory(budget: int) -> InvalidInput:
    """The refusal of an import that ran out of its memory budget."""
    return InvalidInput(
        f"the import needed more than {budget // _MB} MB",
        maxMegabytes=budget // _MB,
        limit="TRANSCRIPTS_IMPORT_JOB_MEMORY_MB",
    )
