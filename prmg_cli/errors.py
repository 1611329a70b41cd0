"""The one error type for mistakes a user can make (bad case files, bad options)."""

from __future__ import annotations


class PrmgError(Exception):
    """A user error, printed by the CLI as one line and mapped to exit code 2.

    The message names where the mistake is: ``file: case 'name': field 'key': what is wrong``.
    Any of ``file``, ``case`` and ``field`` may be omitted when it does not apply.
    """

    def __init__(self, message: str, *, file: str | None = None, case: str | None = None,
                 field: str | None = None):
        self.reason = message
        self.file = file
        self.case = case
        self.field = field
        super().__init__(message)

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(str(self.file))
        if self.case:
            where.append(f"case '{self.case}'")
        if self.field:
            where.append(f"field '{self.field}'")
        return ": ".join(where + [self.reason])
