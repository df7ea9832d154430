"""`envsolve site`: the site's files written into a folder that is new, empty or an earlier site
(a marker file says so), all together (:func:`envsolve.files.write_all`) and only inside it (a
link that leads out of it is refused); nothing is deleted."""

from __future__ import annotations

from pathlib import Path

from ..errors import Problem, SpecError
from ..files import check_output_dir, write_all
from ..provider import Provider
from .pages import pages
from .tables import selector_data

__all__ = ["MARKER", "build_site", "site_files"]

MARKER = ".envsolve-site"  # the file that makes a folder envsolve's site (written with every build)
_MARKER_TEXT = "This folder is written by `envsolve site`; it may replace any file here.\n"


def site_files(provider: Provider) -> dict[str, str]:
    """Every file of the site by its path under the site's folder (the marker included)."""
    files = pages(provider, selector_data(provider))
    files[MARKER] = _MARKER_TEXT
    return dict(sorted(files.items()))


def _check_folder(out: Path) -> None:
    """Refuse a folder that is not a folder, or holds files and is not an earlier site."""
    check_output_dir(out, "-o")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise SpecError([Problem(str(out), "", f"cannot be written (-o): it holds files and is not a site "
                                 f"envsolve wrote (no {MARKER} in it)")],
                        tip="choose a new or empty folder with -o (envsolve site replaces only its own sites)")


def build_site(provider: Provider, out: Path) -> list[Path]:
    """Write the site into ``out``; the paths written, sorted."""
    _check_folder(out)
    files = {out / name: text for name, text in site_files(provider).items()}
    write_all(files, tip="choose a folder you can write with -o", folder=out, option="-o")
    return sorted(files)
