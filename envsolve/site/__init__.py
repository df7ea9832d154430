"""`envsolve site`: the compatibility explorer, a static site made from the data and the solver
(:mod:`.tables` the selector's look-up tables, :mod:`.pages` the pages)."""
