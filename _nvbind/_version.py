"""The project's version, in one place.

Both packages (``pycudnn.__version__``, ``pycutensor.__version__``) and the distribution's metadata
(``[tool.hatch.version]`` in ``pyproject.toml``) read it from here, so a release edits one line.
"""

__version__ = "0.1.0.dev0"
