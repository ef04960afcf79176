"""Sphinx configuration of the documentation site (`nox -s docs` builds it into build/docs).

Why Sphinx: autodoc and napoleon read the docstrings as they are written (reStructuredText
literals, NumPy-style sections), MyST-Parser keeps every page Markdown (the README, the
CHANGELOG and these pages are one dialect, and the tests run their code blocks alike), and
pydata-sphinx-theme is the theme of numpy, SciPy, pandas and CuPy, the sites our users read.
mkdocs, which mkdocs-material and mkdocstrings build on, has had no release since 1.6.1 (2024).

The build is nitpicky with warnings as errors: every cross-reference must resolve. Nothing is
fetched while building (no intersphinx): references to numpy, CuPy and the standard library
that Sphinx cannot resolve offline are listed in ``nitpick_ignore_regex`` below.
"""

from __future__ import annotations

import tinytensor

project = "pytinytensor"
author = "the pytinytensor maintainers"
copyright = "the pytinytensor maintainers"  # noqa: A001 (Sphinx's name)
release = tinytensor.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
# Pages of the repository that are not pages of the site.
exclude_patterns = ["_build", "README.md"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links resolve, and are checked

# autodoc: members in the order of each module's __all__ (or the source), signatures as written
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_inherit_docstrings = True
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_param = False  # the types in Parameters sections are prose ("int, optional"), not references

nitpicky = True
nitpick_ignore_regex = [
    # The standard library, numpy and CuPy: resolvable only with their inventories (none is fetched).
    (
        r"py:.*",
        r"(numpy|np|cupy|cp|array_api_strict|collections|_collections_abc|typing|types|os|io|pathlib|_pickle|pickle|multiprocessing)\..*",
    ),
    # The package's typing aliases (array_types: numpy, CuPy and array_api_strict arrays share no type),
    # the aliases signatures use for what a parameter accepts (each docstring says it in words), and
    # type variables (``_T``): annotations, not classes with pages of their own.
    (r"py:.*", r"tinytensor\.array_types\..*"),
    (r"py:.*", r"(.*\.)?(Array|TensorLike|Operand|MapDataset|CollateFn|ValuesIndices|Size|OutputSize)"),
    (r"py:.*", r"(.*\.)?_[A-Z]\w*"),
    (r"py:class", r"_random\.Generator"),  # tt.Generator, as the data module imports it
    # Base classes and result types a public signature names but users never import: their
    # members are documented on the public classes that use them.
    (r"py:class", r"tinytensor\.nn\.losses\._\w+"),
    (r"py:class", r"tinytensor\.nn\.activations\.Activation"),
    (r"py:class", r"tinytensor\.nn\.base\.LoadResult"),
    (r"py:class", r"tinytensor\.nn\.base\.Parameters"),  # Module.parameters(): a list that is its own iterator
    (r"py:class", r"tinytensor\.tensor\.ElementCount"),  # Tensor.size: an int, callable as size()
    (r"py:class", r"tinytensor\.data\.workers\.WorkerInfo"),
    (r"py:class", r"tinytensor\.cuda\.status\.CudaStatus"),
    (r"py:class", r"tinytensor\.autograd\.Node"),
]

html_theme = "pydata_sphinx_theme"
html_title = f"pytinytensor {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_show_sourcelink = False
