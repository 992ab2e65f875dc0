"""Errors that services raise; views and the API map them to responses."""


class ConflictError(Exception):
    """The object is in a state that refuses this change (an accepted record, a finished job)."""

    def __init__(self, message: str, *, code: str = "conflict") -> None:
        super().__init__(message)
        self.code = code


class NotFoundError(Exception):
    """No such object for this actor (another team's object is reported exactly the same)."""
