"""The pure solver: a :class:`~envsolve.spec.ProjectSpec` and a
:class:`~envsolve.provider.Provider` into one :class:`Resolution` per target, or
:class:`~envsolve.errors.Unsatisfiable` naming the clashing facts and the nearest changes.

Modules, one job each: ``fit`` (does one build serve one target), ``candidates`` (each
framework's fitting builds in preference order), ``together`` (can two candidates share an
environment), ``search`` (the combination), ``explain`` (why, and why not), ``fixes`` (the nearest
changes that work), ``images`` (the base image), ``output`` (the resolution), ``cache`` (the
solver's one cache) and ``model`` (the values), ``extensions`` (the CUDA extension packages of ``[packages] pip``).
"""

from .cache import Cache
from .fixes import nearest_fixes, solve_explained
from .model import Candidate, ExtensionPin, No, PackagePin, Reporter, Resolution
from .search import keras_backend, solve, solve_target

__all__ = ["Cache", "Candidate", "ExtensionPin", "No", "PackagePin", "Reporter", "Resolution", "keras_backend",
           "nearest_fixes", "solve", "solve_explained", "solve_target"]
