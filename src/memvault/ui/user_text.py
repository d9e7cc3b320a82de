"""User text on a page. Text a user or an agent wrote may carry bidirectional controls: a
right-to-left override (U+202E) in a fact reversed the rest of its line, the contradiction
around it and the label of the button that resolves it. So text shown in the page sits in its
own ``<bdi>`` (whatever direction it takes stays inside), and text that cannot be isolated — an
attribute, a control's label — loses those controls."""

from __future__ import annotations

import re

from markupsafe import Markup

# The embeddings and overrides (U+202A to U+202E) and the isolates (U+2066 to U+2069).
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROL = re.compile(f"[{BIDI_CONTROLS}]")


def label(value: object) -> str:
    """For an attribute or a label: the text without bidi controls (still escaped later)."""
    return _CONTROL.sub("", str(value))


def bdi(value: object) -> Markup:
    """For the page's text: escaped, in a ``<bdi>`` of its own."""
    return Markup("<bdi>{}</bdi>").format(value)
