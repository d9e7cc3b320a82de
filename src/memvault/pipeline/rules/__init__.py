"""The write pipeline's judgement calls made offline: no LLM, no network, deterministic.

Used when no LLM is configured, and as the fallback when one fails, so every function here is
pure, fast (regular expressions only; dates are read by ``retrieval.when``) and never raises on
any input text.

* ``decide_duplicate`` — for a pair in the 0.70-0.98 cosine band: *replace* when the new text
  updates the same fact (a changed number or date, a negation flip, an update word with a
  substituted value), *merge* when one adds compatible detail to the other, *keep_both* when
  they are about different subjects or things.
* ``enrich`` — importance 1-10, persistent or temporal (with ``valid_until`` resolved against
  the reference time, in UTC), and 1-4 snake_case topics.
* ``normalise_category`` — one spelling per topic, so tags from the rules and from an LLM meet.
"""

from memvault.language.categories import normalise_category
from memvault.pipeline.rules.dedup import decide_duplicate
from memvault.pipeline.rules.expiry import without_card_expiry
from memvault.pipeline.rules.topics import enrich

__all__ = ["decide_duplicate", "enrich", "normalise_category", "without_card_expiry"]
