"""The one error the front ends show: a request that cannot be served as asked, in one line for the user."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from storage.db import StorageError


class UserError(Exception):
    """A request that cannot be served as asked; the message is one line for the user."""


@contextmanager
def storage_errors() -> Iterator[None]:
    """Report a StorageError (a library that cannot do what was asked) as a UserError."""
    try:
        yield
    except StorageError as error:
        raise UserError(str(error)) from error
