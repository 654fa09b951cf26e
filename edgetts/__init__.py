"""edgetts: an offline announcer daemon for small boards."""

# The one place the version is written (pyproject.toml reads it).  A literal,
# not importlib.metadata: that import alone costs ~3 MB of RSS on a board.
__version__ = "0.1.0"

__all__ = ["__version__"]
