"""``python -m arrowidx``: the ``arrowidx`` command line (:mod:`arrowidx.cli`)."""

from arrowidx.cli import run

run()
