"""The one error every importer raises on input it cannot read."""

from __future__ import annotations


class FormatError(ValueError):
    """Invalid input for a format, listing every problem found as (JSON path, message)."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = list(problems)
        summary = "; ".join(f"{path}: {message}" for path, message in self.problems[:5])
        if len(self.problems) > 5:
            summary += f"; and {len(self.problems) - 5} more"
        super().__init__(summary or "invalid input")
