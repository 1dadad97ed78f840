"""The fast ULID readers (`transcripts.ids`) answer as the ulid package does, for ULIDs in
either case and for strings that are almost ULIDs (a digit too large, a letter Crockford
leaves out, a length off by one, characters beyond ASCII)."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st
from ulid import ULID

from transcripts.ids import (
    is_ulid,
    ulid_from_bytes,
    ulid_number,
    ulid_to_int,
    ulid_to_uuid,
    uuid_text,
)

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ALMOST = st.text(
    st.sampled_from(CROCKFORD + CROCKFORD.lower() + "ILOUilou8-é\x00 "), min_size=24, max_size=27
)
ULIDS = st.integers(min_value=0, max_value=(1 << 128) - 1).map(lambda n: str(ULID.from_int(n)))


def _package(value: str) -> tuple[bool, str | None]:
    try:
        return True, str(ULID.from_str(value).to_uuid())
    except ValueError:
        return False, None


def _ours(value: str) -> tuple[bool, str | None]:
    try:
        converted = ulid_to_uuid(value)
    except ValueError:
        return is_ulid(value), None
    return is_ulid(value), converted


@given(ULIDS | ULIDS.map(str.lower) | ALMOST)
def test_ulids_are_read_as_the_ulid_package_reads_them(value: str) -> None:
    assert _ours(value) == _package(value)


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_ids_go_both_ways(number: int) -> None:
    text = ulid_from_bytes(number.to_bytes(16))
    assert text == str(ULID.from_int(number))
    assert ulid_to_int(text) == number
    assert ulid_to_uuid(text) == str(uuid.UUID(int=number))


def test_what_is_not_a_string_is_no_ulid() -> None:
    assert not is_ulid(None)
    assert not is_ulid(12345678901234567890123456)


@given(ULIDS | ULIDS.map(str.lower) | ALMOST)
def test_a_ulid_s_number_is_the_ulid_package_s(value: str) -> None:
    valid, _ = _package(value)
    assert ulid_number(value) == (int(ULID.from_str(value)) if valid else None)


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_a_number_s_uuid_text_is_uuid_s(number: int) -> None:
    assert uuid_text(number) == str(uuid.UUID(int=number))
