"""The CLI's two consoles. Neither hard-wraps: a message names paths, ids and fields that a
reader copies or a script greps, and the terminal wraps long lines on its own."""

from rich.console import Console

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
