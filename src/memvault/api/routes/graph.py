"""/v1/facts and /v1/entities: the knowledge graph. Parse, call the service, shape the answer."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from memvault.api.deps import ReadMemory, WriteMemory
from memvault.api.schemas import V1_ERRORS, Owner
from memvault.graph.models import (
    EntitiesQuery,
    EntityDetail,
    EntityList,
    FactInput,
    FactList,
    FactsQuery,
    GraphQuery,
    GraphView,
    MergeRequest,
    PromoteRequest,
    ReviewList,
    ReviewsQuery,
)
from memvault.models import Fact

router = APIRouter(prefix="/v1", tags=["graph"], responses=V1_ERRORS)


@router.post("/facts", status_code=status.HTTP_201_CREATED)
async def add_fact(body: FactInput, memory: WriteMemory) -> Fact:
    """A fact stated directly (no extraction): a functional predicate supersedes the
    subject's current value per the contradiction policy."""
    return await memory.add_fact(**body.model_dump())


@router.get("/facts")
async def list_facts(params: Annotated[FactsQuery, Query()], memory: ReadMemory) -> FactList:
    """What is true now as currently known; ``valid_at`` / ``known_at`` / the history."""
    return FactList(results=await memory.facts(**params.model_dump()))


@router.get("/facts/reviews")
async def fact_reviews(params: Annotated[ReviewsQuery, Query()], memory: ReadMemory) -> ReviewList:
    return ReviewList(results=await memory.fact_reviews(**params.model_dump()))


@router.post("/facts/{fact_id}/promote")
async def promote_fact(fact_id: str, body: PromoteRequest, memory: WriteMemory) -> Fact:
    """Copy a project-channel fact to the user's ``_global`` channel, linked PROMOTED_FROM;
    promoting it again answers the same copy."""
    return await memory.promote(fact_id, user_id=body.user_id, reason=body.reason)


@router.get("/entities")
async def list_entities(
    params: Annotated[EntitiesQuery, Query()], memory: ReadMemory
) -> EntityList:
    return EntityList(results=await memory.entities(**params.model_dump()))


@router.get("/entities/{entity_id}")
async def get_entity(
    entity_id: str, owner: Annotated[Owner, Query()], memory: ReadMemory
) -> EntityDetail:
    return await memory.entity(entity_id, user_id=owner.user_id)


@router.get("/entities/{entity_id}/graph")
async def entity_graph(
    entity_id: str, params: Annotated[GraphQuery, Query()], memory: ReadMemory
) -> GraphView:
    """Nodes within ``depth`` hops and the edges among them (relations, and facts whose
    object is an entity)."""
    return await memory.entity_graph(entity_id, user_id=params.user_id, depth=params.depth)


@router.post("/entities/{entity_id}/merge")
async def merge_entity(entity_id: str, body: MergeRequest, memory: WriteMemory) -> EntityDetail:
    """Merge this entity into ``into`` (recorded: ``…/split`` undoes it)."""
    return await memory.merge_entities(entity_id, into=body.into, user_id=body.user_id)


@router.post("/entities/{entity_id}/split")
async def split_entity(
    entity_id: str, owner: Annotated[Owner, Query()], memory: WriteMemory
) -> EntityDetail:
    """Undo this entity's last merge."""
    return await memory.split_entity(entity_id, user_id=owner.user_id)
