"""Topics and importance, and ``enrich``, which puts the offline judgements together."""

from __future__ import annotations

import re
from datetime import datetime

from memvault.language.categories import normalise_category
from memvault.language.when import event_time_of, read_dates
from memvault.pipeline.decisions import Enrichment
from memvault.pipeline.rules.expiry import _utc, _valid_until, without_card_expiry
from memvault.text import TOKEN, normalise

_TOPIC_WORDS: dict[str, str] = {
    "security": """password passwords passcode passphrase pin ssh 2fa otp credential
        credentials login""",
    "health": """allergy allergies allergic anaphylaxis epipen doctor doctors dentist gp
        medication medications medicine pill pills sick ill hospital diabetes diabetic asthma
        blood pain surgery therapy therapist headache migraine injury injured pregnant
        symptom symptoms vaccine vaccinated health flu fever insulin physio cancer
        knee diagnosis diagnosed prescription celiac coeliac intolerant lactose""",
    "food_preference": """food foods eat eats eating ate drink drinks coffee tea sushi pizza
        vegetarian vegan cuisine restaurant restaurants meal meals breakfast lunch dinner spicy
        dessert chocolate meat fish wine beer milk cook cooking recipe recipes gluten snack
        snacks fruit vegetables pasta curry cheese peanut peanuts nut nuts shellfish latte
        espresso cake bread olives seafood""",
    "travel": """flight flights fly flying trip trips travel travels traveling travelling hotel
        hotels airport vacation holiday holidays passport visa train trains seat seats luggage
        abroad booking itinerary airline layover cruise""",
    "work": """work works working job jobs office boss manager colleague colleagues coworker
        meeting meetings project projects deadline deadlines client clients company career
        promotion team employer interview startup engineer developer designer standup shift
        contract freelance""",
    "family": """mother father mom mum dad sister sisters brother brothers son sons daughter
        daughters kid kids child children parent parents grandma grandmother grandpa
        grandfather uncle aunt cousin family baby nephew niece twins""",
    "relationship": """girlfriend boyfriend partner friend friends dating married wedding
        anniversary divorce divorced engaged fiance fiancee husband wife""",
    "pet": """dog dogs cat cats puppy kitten pet pets hamster parrot rabbit vet""",
    "hobby": """hobby hobbies guitar piano violin chess painting reading books novel novels
        hiking running marathon football soccer tennis yoga gym climbing photography
        gardening gaming knitting cycling swimming fishing surfing skiing drawing""",
    "entertainment": """movie movies film films music song songs band bands series netflix
        podcast podcasts concert album anime""",
    "education": """school university college degree course courses class classes exam exams
        study studying student teacher phd thesis learning learn lesson lessons homework""",
    "finance": """money bank salary rent mortgage loan budget invest investing investment stock
        stocks savings tax taxes credit debt pay paid price cost costs expense expenses
        insurance pension bitcoin""",
    "location": """live lives living moved address city apartment flat house home
        neighbourhood neighborhood town country based relocate relocated""",
    "technology": """computer laptop phone software app apps python javascript typescript rust
        code coding programming vim emacs linux macos iphone android server api database git
        editor keyboard""",
    "shopping": """buy bought shop shopping ordered store purchase gift gifts brand""",
    "personal_info": """name named called birthday born age nationality pronouns citizen
        email""",
    "schedule": """appointment appointments calendar schedule reminder remind""",
    "small_talk": """weather rain raining sunny snow snowing hot chilly hello hi thanks lol""",
    "preference": """prefer prefers preferred preference favourite favorite like likes love
        loves hate hates dislike dislikes""",
}
_KEYWORDS: dict[str, str] = {
    word: topic for topic, words in reversed(_TOPIC_WORDS.items()) for word in words.split()
}
# Secrets named in two words ("API key"): single words like "key" or "token" say too little.
_SECRET_PHRASE = re.compile(
    r"\b(api|access|secret|private|ssh|auth|bearer)[\s_-]+(key|token)s?\b", re.IGNORECASE
)
_TOPIC_ORDER = {topic: index for index, topic in enumerate(_TOPIC_WORDS)}
_BASE_IMPORTANCE = {
    "security": 9, "health": 8, "family": 7, "personal_info": 7, "relationship": 6,
    "finance": 6, "work": 5, "education": 5, "pet": 5, "location": 5, "food_preference": 5,
    "preference": 5, "travel": 5, "schedule": 5, "technology": 4, "hobby": 4,
    "entertainment": 4, "shopping": 3, "small_talk": 2, "general": 3,
}  # fmt: skip
_CRITICAL = re.compile(
    r"\b(allerg\w*|anaphyla\w*|epipen|emergency|seizure\w*|suicid\w*|overdose)\b", re.IGNORECASE
)
_EMPHASIS = re.compile(
    r"\b(remember|important|always|never|must|critical|urgent|don't forget|do not forget)\b|!",
    re.IGNORECASE,
)
_MAX_TOPICS = 4


def _topics(text: str, temporal: bool) -> list[str]:
    counts: dict[str, int] = {}
    for token in TOKEN.findall(text.casefold()):
        topic = _KEYWORDS.get(token)
        if topic is not None:
            counts[topic] = counts.get(topic, 0) + 1
    if _SECRET_PHRASE.search(text):
        counts["security"] = counts.get("security", 0) + 2
    if temporal:
        counts["schedule"] = counts.get("schedule", 0) + 1
    ranked = sorted(counts, key=lambda topic: (-counts[topic], _TOPIC_ORDER[topic]))
    topics = list(dict.fromkeys(normalise_category(t) for t in ranked[:_MAX_TOPICS]))
    return topics or ["general"]


def _importance(text: str, topics: list[str]) -> int:
    score = max(_BASE_IMPORTANCE.get(topic, 4) for topic in topics)
    if _CRITICAL.search(text):
        score = max(score, 9)
    if _EMPHASIS.search(text):
        score += 2
    if "small_talk" in topics and set(topics) <= {"small_talk", "schedule"}:
        score = min(score, 2)  # weather and greetings, even dated ones
    if len(TOKEN.findall(text)) < 3 and topics == ["general"]:
        score = min(score, 2)
    return max(1, min(10, score))


def enrich(text: str, reference_time: datetime) -> Enrichment:
    """importance 1-10, persistent|temporal with valid_until resolved against reference_time,
    and normalised snake_case categories (offline)."""
    reference = _utc(reference_time)
    # Read once: the event's date and the expiry come from the same expressions. A card's
    # expiry is a fact about the card, so it is no date for either.
    dated = without_card_expiry(normalise(text))
    reading = read_dates(dated, reference)
    try:
        valid_until = _valid_until(dated, reading, reference)
    except OverflowError:  # a period ending past year 9999: no usable expiry
        valid_until = None
    topics = _topics(text, valid_until is not None)
    return Enrichment(
        importance=_importance(text, topics),
        memory_type="temporal" if valid_until is not None else "persistent",
        valid_until=valid_until,
        categories=topics,
        event_at=event_time_of(reading, reference),
    )


# --- categories ------------------------------------------------------------------------------
