"""Extraction by an LLM: one call returns entities, facts and relations together, and the
answer is held to the same contract the offline rules keep.

The answer is validated leniently and then normalised, because a model that says
"organization" or "works at" has still answered well: predicates become canonical snake_case,
unknown entity types "other", unknown certainty labels "inferred", dates ISO 8601 in UTC or
nothing, and a fact or relation naming something the entity list forgot gets that entity
added, so every subject is an entity (or the owner, ``SELF``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import cast, get_args

from pydantic import BaseModel, ConfigDict, Field

from memvault.graph.claims import (
    CONFIDENCE,
    SELF,
    Certainty,
    EntityMention,
    EntityType,
    Extraction,
    FactClaim,
    RelationClaim,
    Temporal,
    canonical_predicate,
    snake_case,
)
from memvault.graph.extract_rules import ASSISTANT_ROLES, USER_ROLES
from memvault.graph.extraction_prompt import GRAPH_EXTRACT
from memvault.llm.base import LLM

# More than a turn plausibly holds; the rest of an over-long answer is dropped, not failed.
MAX_ITEMS = 64
MAX_NAME = 200
MAX_TEXT = 1000

_TYPES: frozenset[str] = frozenset(get_args(EntityType))
_TYPE_SYNONYMS: dict[str, EntityType] = {
    "organization": "organisation",
    "org": "organisation",
    "company": "organisation",
    "employer": "organisation",
    "institution": "organisation",
    "location": "place",
    "city": "place",
    "country": "place",
    "region": "place",
    "database": "tool",
    "software": "tool",
    "technology": "tool",
    "product": "tool",
    "people": "person",
    "human": "person",
}
_OWNER_WORDS = frozenset({"i", "me", "myself", "user", "the user", "speaker", "the speaker"})
_TEMPORAL: frozenset[str] = frozenset(get_args(Temporal))


class EntityAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(description="as the text spells it")
    type: str = Field(
        description="person, organisation, place, project, tool, event, concept or other"
    )
    aliases: list[str] = Field(default_factory=list, description="other names it goes by")
    description: str | None = Field(default=None, description="a short description, or null")


class FactAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    subject: str = Field(description="an entity's name, or the owner")
    predicate: str = Field(description="snake_case, e.g. lives_in, works_for, job_title")
    object: str | None = Field(default=None, description="an entity's name, or null")
    value: str | None = Field(default=None, description="a literal value, or null")
    certainty: str = Field(default="explicit", description="explicit, implied, inferred, uncertain")
    temporal: str = Field(default="current", description="current, past or future")
    valid_from: str | None = Field(default=None, description="ISO 8601, or null")
    valid_until: str | None = Field(default=None, description="ISO 8601, or null")
    corrects: bool = Field(default=False, description="the text corrects an earlier statement")
    claim: str = Field(default="", description="the fact as one short sentence")


class RelationAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    source: str
    type: str = Field(description="UPPER_SNAKE, e.g. WORKS_FOR, LOCATED_IN, KNOWS")
    target: str
    valid_from: str | None = Field(default=None, description="ISO 8601, or null")
    valid_until: str | None = Field(default=None, description="ISO 8601, or null")


class ExtractionAnswer(BaseModel):
    """Everything one text states: entities, facts and relations."""

    model_config = ConfigDict(extra="ignore")

    entities: list[EntityAnswer] = Field(default_factory=list)
    facts: list[FactAnswer] = Field(default_factory=list)
    relations: list[RelationAnswer] = Field(default_factory=list)


async def extract_with_llm(
    text: str, *, speaker: str | None, reference_time: datetime, llm: LLM
) -> Extraction:
    """One call to ``llm``; raises what ``LLM.structured`` raises (``LLMError``)."""
    if reference_time.tzinfo is None:
        reference_time = reference_time.replace(tzinfo=UTC)
    owner = _owner(speaker)
    answer = await llm.structured(
        GRAPH_EXTRACT,
        ExtractionAnswer,
        text=text,
        speaker=owner if owner != SELF else f"the user ({SELF})",
        reference_time=reference_time.isoformat(),
    )
    extraction = normalise_answer(answer, owner=owner)
    return Extraction(
        entities=extraction.entities,
        facts=extraction.facts,
        relations=extraction.relations,
        extractor=f"llm:{llm.provider}/{llm.model}",
        prompt_version=GRAPH_EXTRACT.version,
    )


def _owner(speaker: str | None) -> str:
    """Who a first-person statement is about: a named speaker, else the memory's owner."""
    name = (speaker or "").strip()
    if not name or name.casefold() in USER_ROLES | ASSISTANT_ROLES:
        return SELF
    return name[:MAX_NAME]


# --- normalisation ---------------------------------------------------------------------------


class _Names:
    """The entity list being built: one entry per case-folded name, first spelling kept."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.entities: dict[str, EntityMention] = {}

    def add(self, mention: EntityMention) -> str:
        key = mention.name.casefold()
        known = self.entities.get(key)
        if known is None or (known.type == "other" and mention.type != "other"):
            self.entities[key] = mention
        return self.entities[key].name

    def resolve(self, raw: str | None) -> str | None:
        """A fact's or relation's end as an entity name (added if missing), or the owner."""
        name = _clean(raw)
        if name is None:
            return None
        if name == SELF or name.casefold() in _OWNER_WORDS or name == self.owner:
            if self.owner != SELF:
                self.add(EntityMention(self.owner, "person"))
            return self.owner
        known = self.entities.get(name.casefold())
        return known.name if known is not None else self.add(EntityMention(name))


def normalise_answer(answer: ExtractionAnswer, *, owner: str = SELF) -> Extraction:
    """An LLM's answer held to the claims contract (see the module docstring)."""
    names = _Names(owner)
    for entity in answer.entities[:MAX_ITEMS]:
        name = _clean(entity.name)
        if name is None or name == SELF or name.casefold() in _OWNER_WORDS:
            continue
        aliases = tuple(dict.fromkeys(a for a in map(_clean, entity.aliases) if a and a != name))
        description = (entity.description or "").strip()[:MAX_TEXT] or None
        names.add(EntityMention(name, _entity_type(entity.type), aliases, description))
    facts = [f for f in map(lambda a: _fact(a, names), answer.facts[:MAX_ITEMS]) if f]
    relations = [r for r in map(lambda a: _relation(a, names), answer.relations[:MAX_ITEMS]) if r]
    return Extraction(
        entities=tuple(names.entities.values()), facts=tuple(facts), relations=tuple(relations)
    )


def _fact(answer: FactAnswer, names: _Names) -> FactClaim | None:
    predicate = canonical_predicate(answer.predicate)
    subject = names.resolve(answer.subject)
    obj = names.resolve(answer.object)
    value = (answer.value or "").strip()[:MAX_TEXT] or None
    if not predicate or subject is None or (obj is None and value is None):
        return None
    target = obj or value or ""
    claim = answer.claim.strip()[:MAX_TEXT] or f"{subject} {predicate.replace('_', ' ')} {target}"
    return FactClaim(
        subject=subject,
        predicate=predicate,
        claim=claim,
        object=obj,
        value=None if obj is not None else value,
        certainty=_certainty(answer.certainty),
        temporal=_temporal(answer.temporal),
        valid_from=_moment(answer.valid_from),
        valid_until=_moment(answer.valid_until),
        corrects=answer.corrects,
    )


def _relation(answer: RelationAnswer, names: _Names) -> RelationClaim | None:
    kind = snake_case(answer.type).upper()
    source, target = names.resolve(answer.source), names.resolve(answer.target)
    if not kind or source is None or target is None:
        return None
    return RelationClaim(
        source=source,
        type=kind,
        target=target,
        valid_from=_moment(answer.valid_from),
        valid_until=_moment(answer.valid_until),
    )


_SPACE = re.compile(r"\s+")


def _clean(raw: str | None) -> str | None:
    name = _SPACE.sub(" ", raw or "").strip().strip("\"'")
    return name[:MAX_NAME] if name and name.casefold() not in ("null", "none") else None


def _entity_type(raw: str) -> EntityType:
    kind = raw.strip().casefold()
    if kind in _TYPES:
        return cast(EntityType, kind)
    return _TYPE_SYNONYMS.get(kind, "other")


def _certainty(raw: str) -> Certainty:
    label = raw.strip().casefold()
    return label if label in CONFIDENCE else "inferred"


def _temporal(raw: str) -> Temporal:
    label = raw.strip().casefold()
    return cast(Temporal, label) if label in _TEMPORAL else "current"


def _moment(raw: str | None) -> datetime | None:
    """ISO 8601 in UTC; anything else (a model's "unknown", "last May") is no date."""
    try:
        moment = datetime.fromisoformat((raw or "").strip().replace("Z", "+00:00"))
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
