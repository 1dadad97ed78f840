"""Input checks of the ledger's services: JSON PostgreSQL can store, and JSON objects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from transcripts.errors import InvalidEvents, InvalidInput, Problem
from transcripts.events import to_storable_json
from transcripts.jsonvalue import JsonObject


def problem_dicts(problems: Sequence[Problem]) -> list[dict[str, str]]:
    """Problems as the dicts an InvalidInput carries."""
    return [p.as_dict() for p in problems]


def check_storable(value: object, field: str) -> None:
    """Refuse a value PostgreSQL cannot store as JSON, naming the offending path."""
    try:
        to_storable_json(value, field)
    except InvalidEvents as exc:
        raise InvalidInput(exc.problems[0].message, problems=problem_dicts(exc.problems)) from None


def check_object(value: object, field: str) -> JsonObject:
    """A JSON object PostgreSQL can store (None is an empty one), or InvalidInput."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{field} must be a JSON object", field=field)
    check_storable(dict(value), field)
    return dict(value)
