"""ULID identifiers: 26-character strings on the wire, and their UUID forms (no Django)."""

from __future__ import annotations

import hashlib
import uuid

from ulid import ULID

from transcripts.errors import InvalidInput

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# A ULID's digits (either case) as the digits int(..., 32) reads, and as nothing.
_AS_BASE32 = str.maketrans(_CROCKFORD + _CROCKFORD.lower(), "0123456789abcdefghijklmnopqrstuv" * 2)
_DROP_DIGITS = str.maketrans(dict.fromkeys(_CROCKFORD + _CROCKFORD.lower()))
_FIRST = frozenset("01234567")  # a larger first digit overflows 128 bits
# Crockford base32 digit pairs: a 128-bit id is 13 ten-bit groups (the first has 8 bits).
_PAIRS = tuple(
    a + b for a in "0123456789ABCDEFGHJKMNPQRSTVWXYZ" for b in "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
)


def ulid_from_uuid(value: uuid.UUID) -> str:
    """The ULID string of a UUID's 128 bits, as str(ULID.from_uuid(value)) spells it."""
    return ulid_from_int(value.int)


def ulid_from_bytes(value: bytes) -> str:
    """The ULID string of 16 bytes (a uuid as PostgreSQL's uuid_send writes it): no UUID
    object is made."""
    return ulid_from_int(int.from_bytes(value))


def ulid_from_int(n: int) -> str:
    """The ULID string of a 128-bit number."""
    # Every id read from the database passes here (tens of thousands for a big export); two
    # digits per lookup is about four times faster than the ulid package's encoder.
    pairs = _PAIRS
    return "".join(
        (
            pairs[n >> 120], pairs[(n >> 110) & 1023], pairs[(n >> 100) & 1023],
            pairs[(n >> 90) & 1023], pairs[(n >> 80) & 1023], pairs[(n >> 70) & 1023],
            pairs[(n >> 60) & 1023], pairs[(n >> 50) & 1023], pairs[(n >> 40) & 1023],
            pairs[(n >> 30) & 1023], pairs[(n >> 20) & 1023], pairs[(n >> 10) & 1023],
            pairs[n & 1023],
        )
    )  # fmt: skip


def new_ulid() -> str:
    """A fresh ULID string."""
    return str(ULID())


def is_ulid(value: object) -> bool:
    """Whether value is a 26-character ULID string (either case), as ULID.from_str reads."""
    # Called for every message of a ThreadProtocol export: a set and a translation instead of
    # the ulid package's decoder (a tenth of the time).
    return (
        isinstance(value, str)
        and len(value) == 26
        and value[0] in _FIRST
        and not value.translate(_DROP_DIGITS)
    )


def ulid_to_int(value: str) -> int:
    """A ULID string's 128 bits (ValueError, as ULID.from_str, when it is none)."""
    number = ulid_number(value)
    if number is None:
        return int(ULID.from_str(value))  # its error, with its message (or a ULID after all)
    return number


def derived_ulid(timestamp_ms: int, counter: int, *seed: str | int) -> str:
    """A ULID made only from its inputs: time part, then counter, then a hash of seed.

    The counter keeps ids made in the same millisecond in creation order.
    """
    digest = hashlib.blake2b("\x1f".join(str(s) for s in seed).encode(), digest_size=8).digest()
    timestamp_ms = max(0, min(timestamp_ms, (1 << 48) - 1))
    raw = timestamp_ms.to_bytes(6, "big") + (counter % 65536).to_bytes(2, "big") + digest
    return str(ULID.from_bytes(raw))


def ulid_timestamp_ms(value: str) -> int:
    """The millisecond timestamp encoded in a ULID string."""
    return int(ULID.from_str(value).milliseconds)


def require_ulid(value: object, field: str) -> str:
    """value as an upper-case ULID string, or InvalidInput naming field."""
    if not is_ulid(value):
        raise InvalidInput(f"{field} must be a 26-character ULID", field=field, value=str(value))
    # ULIDs are case-insensitive; the database hands them back upper-case, so compare that.
    return str(value).upper()


def ulid_to_uuid(value: str) -> str:
    """A ULID string's 128 bits as a UUID string: how ids leave in formats that want UUIDs."""
    return uuid_text(ulid_to_int(value))


def ulid_number(value: object) -> int | None:
    """The 128 bits of a ULID string (either case), None when value is none: `is_ulid` and
    `ulid_to_int` in one step, for a loop over many ids."""
    if not is_ulid(value):
        return None
    assert isinstance(value, str)
    return int(value.translate(_AS_BASE32), 32)


def uuid_text(number: int) -> str:
    """A 128-bit number as str(uuid.UUID(int=number)) spells it, no UUID object made."""
    digits = f"{number:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def uuid_to_ulid(value: object) -> str | None:
    """The ULID holding a UUID string's 128 bits (ulid_to_uuid undone), else None.

    Only the canonical spelling (lower-case, hyphenated) is read, so writing the ULID back
    as a UUID gives exactly the string that came in.
    """
    if not isinstance(value, str):
        return None
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return None
    return str(ULID.from_uuid(parsed)) if str(parsed) == value else None


def to_uuid(value: object) -> uuid.UUID:
    """A ULID string (or UUID, ULID, UUID string) as the UUID PostgreSQL stores.

    Anything else raises ValueError (ULIDField turns it into Django's ValidationError).
    """
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, ULID):
        return value.to_uuid()
    if isinstance(value, str):
        try:
            return ULID.from_str(value).to_uuid() if len(value) == 26 else uuid.UUID(value)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not a valid ULID.") from exc
    raise ValueError(f"{value!r} is not a valid ULID.")


def ulid_of(value: object) -> str:
    """The ULID string of a uuid read from the database (a string stays as it is)."""
    return ulid_from_uuid(value) if isinstance(value, uuid.UUID) else str(value)


def ulid_from_hex(value: str) -> str:
    """The ULID string of a 32-digit hex id (as tree_rows returns them)."""
    return ulid_from_uuid(uuid.UUID(hex=value))
