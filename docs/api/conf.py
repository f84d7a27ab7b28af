"""Sphinx configuration of the API reference (built by scripts/build_docs.sh, warnings as errors)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

project = "cudnn-cutensor-ctypes"
author = "The cudnn-cutensor-ctypes developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
# Importing the packages loads nothing heavy (no libcudnn, no libcutensor): autodoc can run anywhere.
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autoclass_content = "class"
# Names in hints that Sphinx cannot resolve to a documented target are plain text, not warnings.
nitpicky = False
# Both packages have a `Plan` (and a `Handle`, a `TensorDescriptor`): a bare name in a type hint
# matches several targets, and Sphinx warns ("more than one target found", ref.python). The text
# is still right; only that cross-link category is silenced, every other warning is an error.
suppress_warnings = ["ref.python"]
default_role = "code"  # `x` in a docstring is code, as in the project's docstrings
html_theme = "alabaster"
exclude_patterns = ["_build"]
