"""``python -m arrowidx``: the ``arrowidx`` command line (:mod:`arrowidx.cli`)."""

from arrowidx.cli import run

if __name__ == "__main__":
    run()
