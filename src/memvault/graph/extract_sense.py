"""What a plan or a taste the offline extractor read means, judged by classes of English words:
whether a "plan" is a lasting intention or the errand of the day, whether a "taste" names a
thing one likes or only how one feels about doing something.

Each test is a statement about a class of words, never about one sentence: the verbs of
handling one object ("grab", "donate", "frame"), the verbs that name no activity on their own
("try", "get", "help"), the nouns that name nothing alone ("a place", "something").
"""

from __future__ import annotations

import re

from memvault.graph import patterns as p

# Verbs of handling one particular object: "grab a coffee", "donate my old shoes", "frame the
# ticket stub", "serve the cake". What they do is an errand, over when it is done; a lasting
# plan makes, learns, starts, moves, visits or acquires something ("buy a house", "learn
# Spanish", "repaint the kitchen").
_ERRAND = p.words(
    """grab donate serve frame use bring store wrap pack unpack return print mail post send
    deliver drop pick fetch hang display label sort tidy wash clean charge"""
)
# Helping is an offer to the listener, not a plan or a taste of one's own life: "I'd love to
# help in any way I can", "I'd love to lend a hand", "I love to help".
_OFFER = re.compile(r"(?i)^(?:help|helping|assist|assisting|lend|lending|support)\b")
# Verbs of finding out: "explore Frida's heritage", "look into grants" are a topic of the
# conversation; "explore the John Muir Wilderness" (a named place) is an outing.
_INQUIRY = re.compile(
    r"(?i)^(?:explore|research|look\s+into|dig\s+into|delve\s+into|read\s+up\s+on|"
    r"learn\s+about|read\s+about|find\s+out\s+about)\s+(?P<rest>.*)$"
)
_PLACE_NAMED = re.compile(rf"^(?:the\s+)?{p.NAME}(?!'s)(?:\s|$)")
# Nouns that name nothing alone: "create a place for people to dance", "do something fun".
_VAGUE = re.compile(
    r"(?i)^\w+\s+(?:a|an|some|the)?\s*(?:place|thing|things|something|stuff|way|difference|"
    r"bit|lot)\b"
)
# Verbs that name no activity on their own: "I love trying new things", "getting immersed in
# the plot", "improving my skills", "pushing myself". The activity is what follows them, and
# what follows is a way of being, not a thing one likes.
_LIGHT = p.words(
    """get getting try trying make making have having keep keeping improve improving push
    pushing be being feel feeling see seeing"""
)
# What a lone gerund leaves out: "I enjoy playing" — playing what?
_NEEDS_OBJECT = p.words("playing doing making working having getting")
_SELF = re.compile(r"(?i)\b(?:my|our|myself|ourselves|me|us)\b")


# Practising is no plan: "work on improving my old area", "improve my serve", "focus on my
# health" name an effort that goes on, not something that will be done.
_PRACTICE = re.compile(
    r"(?i)^(?:improve|work\s+on|focus\s+on|get\s+better\s+at|practi[cs]e|keep)\b"
)


def errand(plan: str) -> bool:
    """Whether a plan ("verb object") is an errand, an offer, a practice, a topic or says
    nothing."""
    first = plan.split()[0].casefold() if plan.split() else ""
    if first in _ERRAND or _OFFER.match(plan) or _VAGUE.match(plan) or _PRACTICE.match(plan):
        return True
    inquiry = _INQUIRY.match(plan)
    return inquiry is not None and not _PLACE_NAMED.match(inquiry["rest"])


def no_taste(value: str) -> bool:
    """Whether a liked value names no kind of thing: a way of being ("trying new flavours"),
    an offer ("helping"), one's own things or self ("my mountain bike", "pushing myself"),
    or a verb without its object ("playing")."""
    words = value.casefold().split()
    if not words:
        return True
    if words[0] in _LIGHT or _OFFER.match(value) or _SELF.search(value):
        return True
    return len(words) == 1 and words[0] in _NEEDS_OBJECT


# The last word of a name that is a place or an institution, never a person: "Lake Las
# Vegas Resort is a Category 5 hotel" gives no job title.
_INSTITUTION = p.words(
    """resort hotel inn hostel motel museum park centre center hospital clinic university
    college school academy restaurant cafe café bar pub store shop mall market bank airport
    station stadium arena theatre theater gallery library church cathedral temple club
    company corporation inc ltd llc group airlines airline studio studios festival lake
    river mountain island beach bridge street road avenue square tower"""
)


def no_person(name: str) -> bool:
    """Whether a name is a place's or an institution's by its last word."""
    words = name.casefold().split()
    return bool(words) and words[-1] in _INSTITUTION


# A thing named by its make ("Samsung", "MacBook", "iPhone") or a model number mixing letters
# and digits ("X1", "A7R"), not a size or a spec ("4K", "27 oz").
_MAKE = re.compile(r"\b(?:[A-Z][a-z]|i[A-Z])")
_MODEL = re.compile(
    r"\b(?=[A-Za-z-]*\d)(?=[\d-]*[A-Za-z])(?!\d+(?:k|p|gb|tb|mm|cm|oz|in|inch)\b)",
    re.IGNORECASE,
)


def generic(thing: str) -> bool:
    """Whether a thing owned is a household generic ("a new 4K TV", "a waterproof car
    cover"): no make, no model, and no specific kind ("road bike", "peace lily")."""
    if _MAKE.search(thing) or p.SPECIFIC_THING.search(thing):
        return False
    return _MODEL.search(thing) is None


_PURCHASE = re.compile(
    r"(?i)^(?:buy|get|purchase|order|pick\s+up)\s+(?:(?:a|an|some|the|new|another)\s+)*(?P<thing>.+)$"
)


def generic_purchase(plan: str) -> bool:
    """Whether a plan is to buy a household generic ("buy a new TV")."""
    bought = _PURCHASE.match(plan)
    return bought is not None and generic(bought["thing"])


# Adjectives that share the noun after the last of them: "indie and alternative rock" is
# indie rock and alternative rock. A word of an adjective's form ("-al", "-ic", "-ive",
# "-ous", "-ish", "-ese", "-ian", "-ern"; a people's: "Cuban", "French") or a music style's;
# a noun ("pizza and ice cream") shares nothing.
_ADJECTIVE = re.compile(
    r"^(?:(?i:\w+(?:al|ic|ive|ous|ish|ese|ian|ern)|indie|folk|pop|punk)|[A-Z]\w+(?:an|ch|sh))$"
)


def shared_head(items: list[str]) -> list[str]:
    """A list of adjectives before one noun, each given the noun."""
    if len(items) < 2:
        return items
    last = items[-1].split()
    if len(last) != 2 or not all(_ADJECTIVE.match(i) for i in items[:-1]):
        return items
    return [f"{i} {last[-1]}" for i in items[:-1]] + [items[-1]]
