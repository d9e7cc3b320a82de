"""The user's profile (``memory.profile``) per channel: preferences, expertise and style, set
by hand or learned from the graph's facts about the user."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Unpack

from memvault._keywords import ProfileUpdateKeywords
from memvault._sync import takes
from memvault.cognitive.identifiers import checked_id, recall_channels
from memvault.cognitive.kinds import GLOBAL_CHANNEL, Profile, ProfileUpdate
from memvault.db import cognitive as db
from memvault.db.cognitive_records import ProfileRow
from memvault.db.graph import PredicateSet
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, transaction
from memvault.graph.claims import SELF
from memvault.graph.views import FactsQuery
from memvault.models import Fact
from memvault.validation import validated

if TYPE_CHECKING:
    from memvault.context import TenantContext
    from memvault.graph.graph import Graph

PROFILES = "user_profiles"

# Predicates that say what the user likes, knows or how they talk; the rest of the graph's
# facts about the user (where they live, work, …) stay facts, not profile.
LIKING = frozenset({"prefers", "likes", "loves", "enjoys"})
DISLIKING = frozenset({"dislikes", "hates"})
EXPERTISE = frozenset({"expert_in", "works_with", "skilled_in", "knows_language", "speaks"})
STYLE = frozenset({"communication_style", "prefers_style", "style"})


PROFILE_PREDICATES = PredicateSet(LIKING | DISLIKING | EXPERTISE | STYLE, ("favourite_",))


def is_profile_predicate(predicate: str) -> bool:
    return predicate.lower().replace(" ", "_") in PROFILE_PREDICATES


def profile_update_from_facts(
    facts: Iterable[tuple[str, str, str]],
) -> dict[str, Any]:
    """Integration point for the knowledge graph: (subject, predicate, object) facts about the
    user as ``update_profile`` keywords. Predicates it knows: prefers / likes / loves / enjoys
    and dislikes / hates (a preference), favourite_<thing> (the thing's value), expert_in /
    works_with / skilled_in / speaks (expertise), communication_style."""
    preferences: dict[str, Any] = {}
    expertise: builtins.list[str] = []
    style: str | None = None
    for _, predicate, obj in facts:
        name = predicate.lower().replace(" ", "_")
        if name in LIKING:
            preferences[obj] = True
        elif name in DISLIKING:
            preferences[obj] = False
        elif name.startswith("favourite_"):
            preferences[name] = obj
        elif name in EXPERTISE and obj not in expertise:
            expertise.append(obj)
        elif name in STYLE:
            style = obj
    changes: dict[str, Any] = {}
    if preferences:
        changes["preferences"] = preferences
    if expertise:
        changes["expertise"] = expertise
    if style is not None:
        changes["communication_style"] = style
    return changes


class Profiles:
    """A user's profile per channel, learned from the graph's facts about them."""

    def __init__(self, context: TenantContext, graph: Graph) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id
        self._graph = graph

    @scoped_to_tenant
    @takes(ProfileUpdate)
    async def update_profile(self, /, **fields: Unpack[ProfileUpdateKeywords]) -> Profile:
        """Merge preferences key by key (None removes one); expertise and style replace."""
        change = validated(ProfileUpdate, **fields)
        async with transaction(self._backend.engine) as conn:
            rows = await db.fetch_profiles(
                conn, self.tenant_id, change.user_id, [change.channel], lock=True
            )
            current = self._profile_payload(rows[0]) if rows else {}
            merged = {**current.get("preferences", {}), **(change.preferences or {})}
            payload = {
                "preferences": {k: v for k, v in merged.items() if v is not None},
                "expertise": change.expertise
                if change.expertise is not None
                else current.get("expertise", []),
                "communication_style": change.communication_style
                if change.communication_style is not None
                else current.get("communication_style"),
            }
            key = (change.user_id, change.channel)
            await db.put_profile(
                conn,
                {
                    "tenant_id": self.tenant_id,
                    "user_id": change.user_id,
                    "channel": change.channel,
                    **self._context.seal_row(PROFILES, key, payload),
                },
            )
        return await self.get_profile(user_id=change.user_id, channel=change.channel)

    @scoped_to_tenant
    async def get_profile(self, *, user_id: str, channel: str = GLOBAL_CHANNEL) -> Profile:
        """The user's profile as a project channel sees it: _global's, overridden by the
        project's own (preferences key by key)."""
        user_id = checked_id(user_id, "user_id")
        channels = recall_channels(channel)
        rows = await self._learn_profile(user_id, channels)
        if rows is None:  # it learned something: read the profiles it changed
            async with reading(self._backend.engine) as conn:
                rows = await db.fetch_profiles(conn, self.tenant_id, user_id, channels, lock=False)
        by_channel = {r.channel: r for r in rows}
        merged = Profile(user_id=user_id, channel=channels[0])
        for name in reversed(channels):  # _global first, the project's over it
            if name not in by_channel:
                continue
            payload = self._profile_payload(by_channel[name])
            merged = merged.model_copy(
                update={
                    "preferences": {**merged.preferences, **payload.get("preferences", {})},
                    "expertise": payload.get("expertise") or merged.expertise,
                    "communication_style": payload.get("communication_style")
                    or merged.communication_style,
                    "updated_at": max(
                        filter(None, (merged.updated_at, by_channel[name].updated_at))
                    ),
                }
            )
        return merged

    @scoped_to_tenant
    async def update_profile_from_facts(
        self, facts: Iterable[tuple[str, str, str]], *, user_id: str, channel: str = GLOBAL_CHANNEL
    ) -> Profile:
        """Facts about the user (subject, predicate, object) as profile changes; expertise is
        added to what the profile already lists, not replacing it."""
        changes = profile_update_from_facts(facts)
        if not changes:
            return await self.get_profile(user_id=user_id, channel=channel)
        if "expertise" in changes:
            async with reading(self._backend.engine) as conn:
                rows = await db.fetch_profiles(
                    conn, self.tenant_id, checked_id(user_id, "user_id"), [channel], lock=False
                )
            known = self._profile_payload(rows[0]).get("expertise", []) if rows else []
            changes["expertise"] = list(dict.fromkeys([*known, *changes["expertise"]]))
        return await self.update_profile(user_id=user_id, channel=channel, **changes)

    async def _learn_profile(
        self, user_id: str, channels: builtins.list[str]
    ) -> builtins.list[ProfileRow] | None:
        """The graph's facts about the user (subject SELF) recorded since a channel's profile
        last changed, folded into it: each fact once, so a preference the user removed by
        hand after the fact was learned stays removed. The channels' profile rows as read,
        or None when it changed them."""
        async with reading(self._backend.engine) as conn:
            rows = await db.fetch_profiles(conn, self.tenant_id, user_id, channels, lock=False)
        since = {r.channel: r.updated_at for r in rows}
        # Only what each channel's profile has not seen, and only what a profile is made of:
        # a read costs one lookup when nothing is new, however many facts the user has stated
        # about themselves, and a channel with no profile of its own does not read them all
        # again on every remember() (400 such facts once cost 21 ms a call).
        facts: builtins.list[Fact] = await self._graph.read_facts(
            FactsQuery(user_id=user_id, entity=SELF, limit=1_000),
            unseen={channel: since.get(channel) for channel in channels},
            predicates=PROFILE_PREDICATES,
        )
        changed = False
        for channel in channels:
            learned = [
                (f.subject, f.predicate, f.object if f.object is not None else f.value or "")
                for f in sorted(facts, key=lambda f: f.recorded_at)
                # The read kept only what this channel has not seen, of profile predicates;
                # SELF may be the object ("Bob knows @user"), which teaches nothing.
                if f.channel == channel and f.subject == SELF
            ]
            if learned:
                await self.update_profile_from_facts(learned, user_id=user_id, channel=channel)
                changed = True
        return None if changed else rows

    def _profile_payload(self, row: ProfileRow) -> dict[str, Any]:
        payload: dict[str, Any] = self._context.open_row(PROFILES, (row.user_id, row.channel), row)
        return payload
