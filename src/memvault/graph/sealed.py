"""How graph rows keep their text: each sealed column bound to (tenant, row id, column), names
and values compared through keyed hashes, words indexed as blind terms."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from uuid import UUID

from memvault.crypto.envelope import Keyring, KeyringSource, Sealed
from memvault.db.graph import EntityRow, FactRow, RelationRow
from memvault.db.sealed_columns import graph_aad
from memvault.language.keyed import SELF, name_key, self_key, value_key
from memvault.models import Entity, Fact


def seal(keyring: Keyring, tenant_id: str, row_id: UUID, column: str, text: str) -> Sealed:
    return keyring.seal(text, graph_aad(tenant_id, row_id, column))


def open_sealed(
    keyring: Keyring,
    tenant_id: str,
    row_id: UUID,
    column: str,
    ciphertext: bytes,
    nonce: bytes,
    key_id: str,
) -> str:
    return keyring.open(Sealed(ciphertext, nonce, key_id), graph_aad(tenant_id, row_id, column))


def entity_columns(
    keyring: Keyring,
    tenant_id: str,
    entity_id: UUID,
    name: str,
    aliases: Sequence[str],
    description: str | None,
) -> dict[str, Any]:
    """Every sealed and keyed column of an entity, under the active key."""
    values: dict[str, Any] = {"key_id": keyring.active.key_id}
    sealed_name = seal(keyring, tenant_id, entity_id, "name", name)
    values.update(name_ciphertext=sealed_name.ciphertext, name_nonce=sealed_name.nonce)
    values["name_key"] = self_key(keyring) if name == SELF else name_key(keyring, name)
    values["alias_keys"] = sorted({name_key(keyring, a) for a in aliases})
    values["aliases_ciphertext"] = values["aliases_nonce"] = None
    if aliases:
        sealed = seal(keyring, tenant_id, entity_id, "aliases", json.dumps(list(aliases)))
        values.update(aliases_ciphertext=sealed.ciphertext, aliases_nonce=sealed.nonce)
    values["description_ciphertext"] = values["description_nonce"] = None
    if description:
        sealed = seal(keyring, tenant_id, entity_id, "description", description)
        values.update(description_ciphertext=sealed.ciphertext, description_nonce=sealed.nonce)
    return values


def fact_columns(
    keyring: Keyring, tenant_id: str, fact_id: UUID, claim: str, value: str | None
) -> dict[str, Any]:
    values: dict[str, Any] = {"key_id": keyring.active.key_id}
    sealed_claim = seal(keyring, tenant_id, fact_id, "claim", claim)
    values.update(claim_ciphertext=sealed_claim.ciphertext, claim_nonce=sealed_claim.nonce)
    values["value_ciphertext"] = values["value_nonce"] = values["value_key"] = None
    if value is not None:
        sealed = seal(keyring, tenant_id, fact_id, "value", value)
        values.update(
            value_ciphertext=sealed.ciphertext,
            value_nonce=sealed.nonce,
            value_key=value_key(keyring, value),
        )
    return values


def relation_columns(
    keyring: Keyring, tenant_id: str, relation_id: UUID, properties: dict[str, str]
) -> dict[str, Any]:
    if not properties:
        return {"key_id": None, "properties_ciphertext": None, "properties_nonce": None}
    sealed = seal(keyring, tenant_id, relation_id, "properties", json.dumps(properties))
    return {
        "key_id": sealed.key_id,
        "properties_ciphertext": sealed.ciphertext,
        "properties_nonce": sealed.nonce,
    }


@dataclass(frozen=True)
class OpenEntity:
    name: str
    aliases: list[str]
    description: str | None


def open_entity(keyring: Keyring, row: EntityRow) -> OpenEntity:
    def field(column: str, ciphertext: bytes | None, nonce: bytes | None) -> str | None:
        if ciphertext is None or nonce is None:
            return None
        return open_sealed(keyring, row.tenant_id, row.id, column, ciphertext, nonce, row.key_id)

    name = field("name", row.name_ciphertext, row.name_nonce) or ""
    aliases = field("aliases", row.aliases_ciphertext, row.aliases_nonce)
    return OpenEntity(
        name=name,
        aliases=list(json.loads(aliases)) if aliases else [],
        description=field("description", row.description_ciphertext, row.description_nonce),
    )


def open_relation_properties(keyring: Keyring, row: RelationRow) -> dict[str, str]:
    if row.properties_ciphertext is None or row.properties_nonce is None or row.key_id is None:
        return {}
    text = open_sealed(
        keyring,
        row.tenant_id,
        row.id,
        "properties",
        row.properties_ciphertext,
        row.properties_nonce,
        row.key_id,
    )
    found: dict[str, str] = json.loads(text)
    return found


E = TypeVar("E", bound=Entity)


def to_entity(keys: KeyringSource, row: EntityRow) -> Entity:
    return entity_as(keys, row, Entity)


def entity_as(keys: KeyringSource, row: EntityRow, model: type[E], **extra: Any) -> E:
    """An entity row, decrypted, as ``model`` (``Entity`` or a subclass given ``extra``)."""
    opened = open_entity(keys.current(row.tenant_id), row)
    # Built from stored rows, not caller input: nothing to validate.
    built = model.model_construct(
        **extra,
        id=row.id,
        user_id=row.user_id,
        name=opened.name,
        type=row.type,
        aliases=opened.aliases,
        description=opened.description,
        salience=row.salience,
        access_count=row.access_count,
        first_seen=row.first_seen,
        last_accessed=row.last_accessed,
        merged_into=row.merged_into,
    )
    return cast(E, built)


def open_claim(keyring: Keyring, row: FactRow) -> tuple[str, str | None]:
    claim = open_sealed(
        keyring, row.tenant_id, row.id, "claim", row.claim_ciphertext, row.claim_nonce, row.key_id
    )
    value = None
    if row.value_ciphertext is not None and row.value_nonce is not None:
        value = open_sealed(
            keyring,
            row.tenant_id,
            row.id,
            "value",
            row.value_ciphertext,
            row.value_nonce,
            row.key_id,
        )
    return claim, value


def to_fact(
    keys: KeyringSource,
    row: FactRow,
    names: dict[UUID, str],
    memory_ids: Sequence[UUID] = (),
) -> Fact:
    """A fact row, decrypted, its entities named from ``names`` (id → opened name)."""
    claim, value = open_claim(keys.current(row.tenant_id), row)
    return Fact(
        id=row.id,
        user_id=row.user_id,
        channel=row.channel,
        subject_id=row.subject_id,
        subject=names.get(row.subject_id, ""),
        predicate=row.predicate,
        object_id=row.object_id,
        object=names.get(row.object_id) if row.object_id is not None else None,
        value=value,
        claim=claim,
        confidence=row.confidence,
        certainty=row.certainty,
        temporal=row.temporal,
        source=row.source,
        valid_from=row.valid_from,
        valid_until=row.valid_until,
        recorded_at=row.recorded_at,
        superseded_at=row.superseded_at,
        superseded_by=row.superseded_by,
        memory_ids=list(memory_ids),
    )
