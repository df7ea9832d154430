"""The image-matrix feature of `envsolve matrix`: ``parse`` reads a matrix file, ``cells`` solves
every cell, ``formats`` prints them, ``workflow`` writes the GitHub Actions workflow, ``images``
checks existing images."""
