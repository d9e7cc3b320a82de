"""What an extractor says a text claims: entities, facts and relations, before resolution.

This is the contract between the extractors (``graph.extract``: offline rules or an LLM) and
the graph store (resolution, supersession, persistence). Names here are surface names as the
text spells them; the store resolves them to entities within the user's scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from memvault.language.keyed import SELF as SELF

EntityType = Literal[
    "person", "organisation", "place", "project", "tool", "event", "concept", "other"
]
Certainty = Literal["explicit", "implied", "inferred", "uncertain"]
Temporal = Literal["current", "past", "future"]

# A certainty label and its confidence are one thing said twice; the label decides.
CONFIDENCE: dict[Certainty, float] = {
    "explicit": 0.95,
    "implied": 0.85,
    "inferred": 0.70,
    "uncertain": 0.50,
}

# Predicates that hold one value at a time: a new current value supersedes the old one.
FUNCTIONAL_PREDICATES: frozenset[str] = frozenset(
    {
        "lives_in",
        "works_for",
        "job_title",
        "married_to",
        "partner_of",
        "birthday",
        "age",
        "studies_at",
        "favourite",
        "uses_database",
        "drives",
        "phone_number",
        "email",
        "name",
        "birth_year",
        "born_in",
        "has_children",
    }
)

RELATION_TYPES: frozenset[str] = frozenset(
    {
        "RELATED_TO",
        "PART_OF",
        "LOCATED_IN",
        "WORKS_FOR",
        "KNOWS",
        "CREATED_BY",
        "REFERENCES",
    }
)


@dataclass(frozen=True)
class EntityMention:
    name: str
    type: EntityType = "other"
    aliases: tuple[str, ...] = ()
    description: str | None = None


@dataclass(frozen=True)
class FactClaim:
    """``subject predicate object`` (an entity name) or ``subject predicate value`` (a literal).

    ``claim`` is the fact as one readable sentence ("Bob works for Acme"); it is what is sealed,
    embedded and shown. ``corrects`` marks correction phrasing ("actually…", "not X but Y"):
    the fact supersedes the current value of the same subject and predicate even when the
    predicate is not functional.
    """

    subject: str
    predicate: str
    claim: str
    object: str | None = None
    value: str | None = None
    certainty: Certainty = "explicit"
    temporal: Temporal = "current"
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    corrects: bool = False

    @property
    def confidence(self) -> float:
        return CONFIDENCE[self.certainty]


@dataclass(frozen=True)
class RelationClaim:
    source: str
    type: str
    target: str
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Extraction:
    entities: tuple[EntityMention, ...] = ()
    facts: tuple[FactClaim, ...] = ()
    relations: tuple[RelationClaim, ...] = ()
    # "offline" or "llm:<provider>/<model>", and the prompt version when an LLM answered.
    extractor: str = "offline"
    prompt_version: int | None = None

    @property
    def empty(self) -> bool:
        return not (self.entities or self.facts or self.relations)


# --- predicate spelling, shared by the extractors and structured input -----------------------

# Other spellings of the functional predicates that models and people use, so "works_at" and
# "works_for" meet as one predicate and supersede each other.
PREDICATE_ALIASES: dict[str, str] = {
    "works_at": "works_for",
    "employed_by": "works_for",
    "employer": "works_for",
    "lives_at": "lives_in",
    "resides_in": "lives_in",
    "city": "lives_in",
    "based_in": "lives_in",
    "job": "job_title",
    "title": "job_title",
    "role": "job_title",
    "position": "job_title",
    "occupation": "job_title",
    "profession": "job_title",
    "database": "uses_database",
    "uses_db": "uses_database",
    "db": "uses_database",
    "spouse": "married_to",
    "wife": "married_to",
    "husband": "married_to",
    "spouse_of": "married_to",
    "partner": "partner_of",
    "girlfriend": "partner_of",
    "boyfriend": "partner_of",
    "date_of_birth": "birthday",
    "born_on": "birthday",
    "studies": "studies_at",
    "student_at": "studies_at",
    "favorite": "favourite",
    # the everyday predicates of the offline extractor, as models tend to spell them
    "allergy": "allergic_to",
    "allergies": "allergic_to",
    "allergic": "allergic_to",
    "condition": "has_condition",
    "medication": "takes_medication",
    "pet": "has_pet",
    "pets": "has_pet",
    "owns_pet": "has_pet",
    "hobbies": "hobby",
    "language": "speaks",
    "languages": "speaks",
    "speaks_language": "speaks",
    "children": "has_children",
    "number_of_children": "has_children",
    "plans": "plans_to",
    "plan": "plans_to",
    "travelling_to": "travels_to",
    "traveling_to": "travels_to",
    "dislike": "dislikes",
    "diet_type": "diet",
    "hometown": "comes_from",
    "birthplace": "born_in",
    "place_of_birth": "born_in",
}

_NOT_SNAKE = re.compile(r"[^0-9a-z]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """``"Works For"``, ``"worksFor"``, ``"works-for"`` → ``"works_for"``."""
    return _NOT_SNAKE.sub("_", _CAMEL.sub("_", name.strip()).lower()).strip("_")


def canonical_predicate(name: str) -> str:
    """One spelling per predicate: snake_case, the aliases above folded in, and ``favorite_x``
    spelled ``favourite_x``."""
    predicate = snake_case(name)
    if predicate.startswith("favorite_"):
        predicate = "favourite_" + predicate.removeprefix("favorite_")
    return PREDICATE_ALIASES.get(predicate, predicate)


def is_functional(predicate: str) -> bool:
    """Whether a subject holds one value of ``predicate`` at a time. ``favourite_<thing>``
    (favourite_colour, favourite_food) is functional per thing: a new favourite colour
    replaces the old one, not the favourite food."""
    predicate = canonical_predicate(predicate)
    return predicate in FUNCTIONAL_PREDICATES or predicate.startswith("favourite_")
