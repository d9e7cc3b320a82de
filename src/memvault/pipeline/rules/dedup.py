"""``decide_duplicate``: replace, merge or keep both, for a pair in the 0.70-0.98 cosine band."""

from __future__ import annotations

from dataclasses import dataclass

from memvault.language.words import (
    _ARTICLES,
    _FUNCTIONAL,
    _MONTHS,
    _NEGATIONS,
    _PRONOUNS,
    _RELATIONS,
    _STANCE,
    _TIME_WORDS,
    _UPDATE_CUES,
    _VERBS,
    _expand,
    _number,
    _stem,
)
from memvault.pipeline.decisions import DedupDecision
from memvault.text import STOP_WORDS, TOKEN


@dataclass(frozen=True)
class _Facts:
    content: frozenset[str]  # stemmed content words, no stop words, numbers or update cues
    values: frozenset[str]  # numbers, weekdays, months: the slots an update changes
    entities: frozenset[str]  # capitalised names, lowercased
    subject: frozenset[str]  # the words before the verb, lowercased, no articles
    negated: bool
    update_cue: bool
    functional: bool


def _raw_tokens(text: str) -> list[str]:
    return TOKEN.findall(_expand(text))


def _subject(tokens: list[str]) -> frozenset[str]:
    """Content words before the first verb (at most three): {alice, meeting} in "Alice's
    meeting is on Monday". Dates and numbers are left out: they are values, not subjects."""
    words: list[str] = []
    previous = ""
    for token in tokens[:6]:
        word = _STANCE.get(token.casefold(), token.casefold())
        if word in _PRONOUNS and not words:
            return frozenset([word])
        if words and (word in _VERBS or _verb_after_name(previous, token)):
            break
        previous = token
        if word in _ARTICLES or word == "s" or word in _TIME_WORDS or _number(word):
            continue
        words.append(word)
        if len(words) == 3:
            break
    return frozenset(words)


def _verb_after_name(previous: str, token: str) -> bool:
    """'Zoe bakes', 'Grace changed': a lowercase -s or -ed word right after a name."""
    return (
        previous[:1].isupper()
        and token.islower()
        and len(token) > 2
        and (token.endswith("ed") or (token.endswith("s") and not token.endswith("ss")))
    )


def _is_entity(token: str, position: int, tokens: list[str]) -> bool:
    lowered = token.casefold()
    if not token[:1].isupper() or lowered in STOP_WORDS or lowered in _TIME_WORDS:
        return False
    if lowered in _MONTHS or lowered in _STANCE or lowered in _NEGATIONS:
        return False
    # A capital that only starts the sentence is a name when a verb or a possessive follows.
    following = tokens[1].casefold() if len(tokens) > 1 else ""
    return position > 0 or following in _VERBS or following == "s"


def _facts(text: str) -> _Facts:
    tokens = _raw_tokens(text)
    content: set[str] = set()
    values: set[str] = set()
    negations = 0
    cue = functional = False
    for token in tokens:
        lowered = token.casefold()
        for word in _STANCE.get(lowered, lowered).split():
            number = _number(word)
            if number is not None:
                values.add(number)
            elif word in _TIME_WORDS or (word in _MONTHS and (word != "may" or token == "May")):
                values.add(word)
            elif word in _NEGATIONS:
                negations += 1
            elif word in _UPDATE_CUES:
                cue = True
            elif word not in STOP_WORDS:
                content.add(_stem(word))
            functional = functional or word in _FUNCTIONAL
    entities = frozenset(t.casefold() for i, t in enumerate(tokens) if _is_entity(t, i, tokens))
    return _Facts(
        content=frozenset(content),
        values=frozenset(values),
        entities=entities,
        subject=_subject(tokens),
        negated=negations % 2 == 1,
        update_cue=cue,
        functional=functional,
    )


def _swapped(a: frozenset[str], b: frozenset[str]) -> bool:
    """Each side has something the other lacks: a substitution, not an addition."""
    return bool(a - b) and bool(b - a)


def _containment(a: frozenset[str], b: frozenset[str]) -> float:
    smaller = min(len(a), len(b))
    return len(a & b) / smaller if smaller else 0.0


def _combined(existing: str, new: str) -> str:
    first = existing.strip()
    if first and first[-1] not in ".!?":
        first += "."
    return f"{first} {new.strip()}"


_SAME_MEANING = 0.95


def _decision(action: str, reason: str, merged: str | None = None) -> DedupDecision:
    return DedupDecision.model_validate({"action": action, "merged_text": merged, "reason": reason})


def decide_duplicate(existing: str, new: str, similarity: float) -> DedupDecision:
    """For a pair in the 0.70-0.98 cosine band: merge | replace | keep_both, from token
    overlap and negation / number changes (offline)."""
    a, b = _facts(existing), _facts(new)
    if (
        a.subject
        and b.subject
        and (_swapped(a.subject, b.subject) or (a.subject ^ b.subject) & _RELATIONS)
    ):
        return _decision("keep_both", "different subject")
    only_a, only_b = a.content - b.content, b.content - a.content
    overlap = _containment(a.content, b.content)
    names_differ = _swapped(a.entities, b.entities)
    if _swapped(a.values, b.values) and overlap >= 0.5:
        if names_differ and not b.update_cue:
            return _decision("keep_both", "different names and values")
        return _decision("replace", "same fact, changed number or date")
    if a.negated != b.negated:
        if overlap >= 0.67 and len(only_a) <= 1 and len(only_b) <= 1:
            return _decision("replace", "same fact, negation flipped")
        return _decision("keep_both", "opposite polarity about different things")
    single_valued = a.functional and b.functional
    if (
        only_a
        and only_b
        and (
            (b.update_cue and (overlap >= 0.5 or single_valued))
            or (single_valued and overlap >= 0.5)
        )
    ):
        return _decision("replace", "same fact, changed value")
    if overlap < 0.34:
        return _decision("keep_both", "little content in common")
    if not only_a and not only_b:
        longer = new if len(new.strip()) > len(existing.strip()) else existing
        return _decision("merge", "same content, reworded", longer.strip())
    if not only_a:
        return _decision("merge", "new memory adds detail", new.strip())
    if not only_b:
        return _decision("merge", "existing memory already says more", existing.strip())
    if names_differ:
        return _decision("keep_both", "different names")
    # Both add words: "likes tennis" / "likes squash" is a second fact, so only texts that
    # mean nearly the same anyway are combined, and never a one-for-one swap ("left-handed" /
    # "right-handed"): keeping both loses nothing.
    if similarity >= _SAME_MEANING and max(len(only_a), len(only_b)) > 1:
        return _decision("merge", "compatible details", _combined(existing, new))
    return _decision("keep_both", "different details")
