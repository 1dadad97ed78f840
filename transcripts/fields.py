"""Model fields."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from ulid import ULID

from transcripts.ids import to_uuid, ulid_from_uuid


def _uuid(value: object) -> uuid.UUID:
    """to_uuid, failing as Django fields fail: with a ValidationError."""
    try:
        return to_uuid(value)
    except ValueError as exc:
        raise ValidationError(f"{value!r} is not a valid ULID.", code="invalid") from exc


class ULIDField(models.Field[str | uuid.UUID, str]):
    """A ULID kept in a native uuid column and exposed as a 26-character string."""

    description = "ULID"

    def get_internal_type(self) -> str:
        return "UUIDField"

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> str | None:
        if value is None:
            return None
        return ulid_from_uuid(value)

    def to_python(self, value: Any) -> Any:
        if value is None or value == "":
            return None
        return str(ULID.from_uuid(_uuid(value)))

    def get_prep_value(self, value: Any) -> Any:
        if value is None or value == "":
            return None
        return _uuid(value)

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if value is None:
            return None
        return value if prepared and isinstance(value, uuid.UUID) else _uuid(value)
