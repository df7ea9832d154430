"""What the index is read through: one protocol that steering, ``data --verify`` and ``refresh``'s
survey take (:class:`envsolve.index.client.IndexClient` implements it; tests may pass a fake)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from .metadata import Metadata
from .pages import DistFile

__all__ = ["Reader"]


class Reader(Protocol):
    """A package index, read."""

    @property
    def index_url(self) -> str:
        """The index's simple-API root, as shown to people."""
        ...

    @property
    def warnings(self) -> list[str]:
        """Files that could not be read and were skipped."""
        ...

    def project(self, name: str, *, revalidate: bool = False) -> tuple[DistFile, ...]:
        """The files of ``name``'s project page (``revalidate``: not a cached page as is)."""
        ...

    def metadata(self, f: DistFile) -> Metadata | None:
        """The core metadata of ``f`` (None when the index serves none)."""
        ...

    def first_metadata(self, files: Iterable[DistFile]) -> tuple[DistFile, Metadata] | None:
        """The metadata of the best Linux wheel among ``files`` that can be read."""
        ...

    def wheel_member(self, f: DistFile, pattern: str, what: str = "") -> str | None:
        """The text of the member of wheel ``f`` whose path matches ``pattern``."""
        ...
