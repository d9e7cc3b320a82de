"""``normalise_category``: one spelling per topic, so tags from the rules and an LLM meet."""

from __future__ import annotations

import difflib
import re
import unicodedata
from functools import lru_cache

from memvault.language.words import _words

_VOCABULARY = (
    "food_preference", "health", "travel", "work", "family", "relationship", "hobby",
    "schedule", "finance", "location", "education", "pet", "shopping", "technology",
    "personal_info", "security", "entertainment", "preference", "small_talk", "general",
)  # fmt: skip
_ABBREVIATIONS = {
    "pref": "preference", "prefs": "preference", "tech": "technology", "edu": "education",
    "info": "info", "misc": "general", "fin": "finance", "loc": "location", "med": "medical",
}  # fmt: skip
_CANONICAL = {
    "food": "food_preference", "diet": "food_preference", "dietary_preference":
    "food_preference", "food_and_drink": "food_preference", "cuisine": "food_preference",
    "dietary_restriction": "food_preference", "food_like": "food_preference",
    "job": "work", "career": "work", "employment": "work", "professional": "work",
    "office": "work", "work_life": "work",
    "medical": "health", "medicine": "health", "wellness": "health", "fitness": "health",
    "allergy": "health", "health_and_fitness": "health",
    "trip": "travel", "travelling": "travel", "traveling": "travel", "vacation": "travel",
    "money": "finance", "financial": "finance", "banking": "finance", "finance_and_money":
    "finance",
    "kid": "family", "child": "family", "parent": "family", "family_member": "family",
    "animal": "pet",
    "software": "technology", "programming": "technology", "computer": "technology",
    "coding": "technology",
    "school": "education", "study": "education", "university": "education",
    "learning": "education",
    "interest": "hobby", "leisure": "hobby", "pastime": "hobby",
    "calendar": "schedule", "appointment": "schedule", "event": "schedule", "plan": "schedule",
    "reminder": "schedule",
    "home": "location", "address": "location", "residence": "location", "place": "location",
    "personal": "personal_info", "identity": "personal_info", "bio": "personal_info",
    "profile": "personal_info", "personal_detail": "personal_info",
    "personal_information": "personal_info",
    "romance": "relationship", "dating": "relationship", "partner": "relationship",
    "password": "security", "credential": "security",
    "movie": "entertainment", "music": "entertainment",
    "like": "preference", "opinion": "preference",
    "weather": "small_talk", "chitchat": "small_talk", "chit_chat": "small_talk",
    "other": "general", "miscellaneous": "general", "uncategorized": "general",
    "uncategorised": "general", "none": "general",
}  # fmt: skip
_UNCHANGED_PLURALS = _words(
    "news series species politics physics mathematics economics maths lens gas bus"
)
_MAX_CATEGORY_CHARS = 64


def _singular(word: str) -> str:
    if word in _UNCHANGED_PLURALS or len(word) < 4:
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@lru_cache(maxsize=4096)
def normalise_category(raw: str) -> str:
    """snake_case, ASCII, singular, near-spellings cluster: 'Food Preferences', 'food-preference',
    'food_prefs' → 'food_preference' (use a small canonical table + simple stemming)."""
    ascii_text = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode()
    ascii_text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", ascii_text)  # camelCase → camel_Case
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    kept: list[str] = []
    for word in words:
        # Cut at word boundaries (a cut word would singularise again on a second pass).
        word = _singular(_ABBREVIATIONS.get(word, word)[:_MAX_CATEGORY_CHARS])
        if len("_".join([*kept, word])) > _MAX_CATEGORY_CHARS:
            break
        kept.append(word)
    joined = "_".join(kept)
    if not joined:
        return "general"
    if joined in _CANONICAL:
        return _CANONICAL[joined]
    if len(joined) >= 5 and joined not in _VOCABULARY:
        # Near-spellings ("food_preferance", "helth") join their topic; 0.88 keeps
        # "wealth" away from "health".
        close = difflib.get_close_matches(joined, _VOCABULARY, n=1, cutoff=0.88)
        if close:
            return close[0]
    return joined
