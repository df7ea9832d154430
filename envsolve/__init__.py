"""envsolve: resolve GPU software stacks against a sourced compatibility graph."""

__version__ = "0.1.0"
