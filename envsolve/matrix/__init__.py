"""The image-matrix feature of `envsolve matrix`: ``spec`` parses a matrix file, ``cells`` solves
every cell, ``formats`` prints them, ``images`` checks existing images."""
