"""The current graph as files graph databases load: openCypher statements (Neo4j, FalkorDB,
Memgraph) or two CSV files (nodes, edges) for their bulk loaders.

Entities become ``:Entity`` nodes with their type as a second label; a fact whose object is an
entity becomes an edge typed by its predicate (``works_for`` → ``WORKS_FOR``); a fact with a
literal value becomes an edge to a ``:Value`` node; relations are edges of their own type.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from memvault.crypto.envelope import Keyring
from memvault.db.graph import EntityRow, FactRow, RelationRow
from memvault.graph import sealed

_NOT_NAME = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True)
class Node:
    id: str
    labels: tuple[str, ...]
    properties: dict[str, Any]


@dataclass(frozen=True)
class Link:
    source: str
    type: str
    target: str
    properties: dict[str, Any]


@dataclass
class OpenGraph:
    nodes: list[Node] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)


def label(text: str) -> str:
    """An identifier Cypher takes unquoted: letters, digits and underscores, not leading
    with a digit."""
    cleaned = _NOT_NAME.sub("_", text).strip("_") or "RELATED_TO"
    return cleaned if not cleaned[0].isdigit() else f"_{cleaned}"


def _time(value: Any) -> str | None:
    return None if value is None else value.isoformat()


def opened(
    keyring: Keyring,
    entities: list[EntityRow],
    facts: list[FactRow],
    relations: list[RelationRow],
) -> OpenGraph:
    graph = OpenGraph()
    known: set[UUID] = set()
    for row in entities:
        name = sealed.open_entity(keyring, row).name
        known.add(row.id)
        graph.nodes.append(
            Node(
                str(row.id),
                ("Entity", label(row.type.capitalize())),
                {"id": str(row.id), "name": name, "type": row.type, "user_id": row.user_id},
            )
        )
    for fact in facts:
        if fact.subject_id not in known or (fact.object_id and fact.object_id not in known):
            continue
        claim, value = sealed.open_claim(keyring, fact)
        properties = {
            "fact_id": str(fact.id),
            "claim": claim,
            "confidence": fact.confidence,
            "valid_from": _time(fact.valid_from),
            "valid_until": _time(fact.valid_until),
        }
        target = str(fact.object_id)
        if fact.object_id is None:
            target = f"value-{fact.id}"
            graph.nodes.append(Node(target, ("Value",), {"id": target, "value": value}))
        graph.links.append(
            Link(str(fact.subject_id), label(fact.predicate.upper()), target, properties)
        )
    for relation in relations:
        if relation.source_id not in known or relation.target_id not in known:
            continue
        properties = {"relation_id": str(relation.id), "valid_from": _time(relation.valid_from)}
        properties |= sealed.open_relation_properties(keyring, relation)
        graph.links.append(
            Link(str(relation.source_id), label(relation.type), str(relation.target_id), properties)
        )
    return graph


def _literal(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    # A JSON string is a valid Cypher string literal once its quotes are single-quote safe.
    return json.dumps(str(value), ensure_ascii=False).replace("'", "\\'")


def _map(properties: dict[str, Any]) -> str:
    pairs = [f"{label(k)}: {_literal(v)}" for k, v in properties.items() if v is not None]
    return "{" + ", ".join(pairs) + "}"


def to_cypher(graph: OpenGraph) -> str:
    """One statement per line: nodes first, then edges matched by id."""
    lines = [f"CREATE (:{':'.join(n.labels)} {_map(n.properties)});" for n in graph.nodes]
    for link in graph.links:
        lines.append(
            f"MATCH (a {{id: {_literal(link.source)}}}), (b {{id: {_literal(link.target)}}}) "
            f"CREATE (a)-[:{link.type} {_map(link.properties)}]->(b);"
        )
    return "\n".join(lines) + ("\n" if lines else "")


def to_csv(graph: OpenGraph) -> dict[str, str]:
    nodes = io.StringIO()
    writer = csv.writer(nodes)
    writer.writerow(["id", "labels", "name", "type", "value", "user_id"])
    for n in graph.nodes:
        p = n.properties
        writer.writerow(
            [
                n.id,
                ";".join(n.labels),
                p.get("name"),
                p.get("type"),
                p.get("value"),
                p.get("user_id"),
            ]
        )
    edges = io.StringIO()
    writer = csv.writer(edges)
    writer.writerow(["source", "type", "target", "properties"])
    for link in graph.links:
        writer.writerow([link.source, link.type, link.target, json.dumps(link.properties)])
    return {"nodes.csv": nodes.getvalue(), "edges.csv": edges.getvalue()}
