"""``python -m memvault.cli``: the ``memvault`` command."""

from memvault.cli import main

main()
