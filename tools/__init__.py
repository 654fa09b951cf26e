"""The project's benchmarks, generators and rigs: a package, run from the repository root.

Each tool starts as ``python -m tools.NAME ...`` from the root of the checkout (never ``python
tools/NAME.py``).  With ``-m`` the current directory is the first entry of ``sys.path``, ahead of
site-packages, so a tool imports *this checkout's* ``edgetts`` even from a venv whose editable install
points at another clone (a benchmark once measured the wrong clone so), and its siblings as
``tools.X`` (``from tools.benchstats import percentile``).  No tool edits ``sys.path``: the tests run
them the same way (``cwd`` or ``PYTHONPATH`` at the root) and import them as ``tools.X`` too, through
pytest's ``pythonpath`` (pyproject.toml).  A tool that starts a sibling, or itself as a child, starts
``python -m tools.NAME``: the child inherits the working directory (or ``PYTHONPATH``) that found this
package.
"""
