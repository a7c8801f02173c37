"""The `colocate` program: the composition root that puts the components' command groups together."""

#: colocate's version, the one place it is written: the wheel's metadata reads it (pyproject.toml,
#: `[tool.setuptools.dynamic]`), `colocate --version` prints it, and a test holds the image's label
#: and the manifests' image tags to it (tests/colocate/test_version.py).
__version__ = "0.1.0"
