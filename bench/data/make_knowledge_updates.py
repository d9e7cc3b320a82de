"""Writes bench/data/knowledge_updates.json: knowledge that changes over time, told in
conversation turns, with questions about what is true now, what was true then, and what the
store believed then.

    python bench/data/make_knowledge_updates.py      # deterministic: same file every run

120 subjects (90 people, 30 projects), each with one functional fact (lives_in, works_for,
job_title or uses_database) that takes 2-5 successive values over 2019-2025. Each value is
told in one turn, some time after it became true; about a quarter of the subjects have one
value misstated and corrected a few days later ("Actually, Dana lives in Lyon, not Paris").
Phrasing varies on purpose: about half the turns use the shapes the issue names ("I moved to
Z", "I work at Y", "We use X for project P"), the rest are written as people talk ("Finally
settled into my new flat in Lyon", "Acme hired Dana last month"), so an extractor that only
knows the named shapes cannot score well, and its figure is honest.

Schema (all times ISO 8601 UTC):

{
  "description", "generator", "seed", "user_id",
  "subjects": [{
      "id": "s001", "name": "Dana", "kind": "person" | "project",
      "predicate": "lives_in" | "works_for" | "job_title" | "uses_database",
      "object_type": "place" | "organisation" | "tool" | null   (null: a literal value),
      "timeline": [{"value": "Lyon", "valid_from": T}, ...]   (the truth, corrections applied)
  }],
  "turns": [{                                  (sorted by timestamp)
      "id": "t0001", "subject": "s001",
      "speaker": "Dana" | null                 (null: the store's owner is speaking),
      "timestamp": T                           (when it was said: when the store learns it),
      "text": "...",
      "phrasing": "canonical" | "varied",
      "date_form": "none" | "absolute" | "relative",
      "corrects": bool                         (the turn corrects the subject's previous turn),
      "misstated": bool                        (the turn states a wrong value, corrected later),
      "triple": {"subject", "predicate", "object" | null, "value" | null,
                 "valid_from": T}              (what the turn says, as structured input)
  }],
  "questions": [{
      "id": "q0001", "subject": "s001", "entity": "Dana", "predicate": "lives_in",
      "kind": "current"     (what is true now, as currently known)
            | "valid_at"    (what was true in the world at "at", as currently known)
            | "known_at",   (what the store believed was true at "at": turns said by then),
      "at": T | null, "answer": "Lyon"
  }]
}

A turn with no date in its text ("I just moved to Lyon") tells of a change on the day it is
said; a dated one ("last month", "in March 2023", "3 weeks ago") of a change on that date.
"valid_at" questions fall mid-way between two changes (at least 45 days from either), and
"known_at" questions mid-way between two turns about the subject, so a date read to the
month is precise enough.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

SEED = 13
OUT = Path(__file__).resolve().parent / "knowledge_updates.json"
USER_ID = "knowledge-updates"


def listed(text: str, sep: str | None = None) -> list[str]:
    return [item.strip() for item in text.split(sep)]


PEOPLE = listed(
    """Dana Bruno Chiara Dmitri Elif Farid Greta Hamza Ingrid Jonas Keiko Lars Marisol
Nikhil Odette Pavel Quentin Rosa Soren Tamsin Ugo Valeria Wendell Ximena Yusuf Zofia Anouk
Bastien Caspian Delphine Emeka Fatima Gideon Hana Ivo Jolene Kofi Leandro Mireille Nadia
Orla Piotr Rafaela Stellan Tariq Ulla Vikram Wren Yara Zeno Amara Benedikt Cosima Dario Esme
Florian Giulia Hector Isolde Jasper Kasimir Lucia Matteo Noor Oskar Priya Rasmus Selin Tobias
Uma Viggo Willa Xander Yvette Zara Alvaro Brigitte Cyrus Dagny Eamon Freya Gustavo Helga
Imran Juno Kenji Liesel Magnus Nell Oona"""
)
PROJECTS = listed(
    """Falcon Orion Atlas Kite Nimbus Juniper Quasar Tundra Meridian Pelican Halcyon
Saffron Basalt Cobalt Lantern Mistral Sequoia Zephyr Marigold Obsidian Tessera Vantage
Willow Harbor Ember Solstice Cascade Onyx Bramble Fjord"""
)
CITIES = """Lyon|Lisbon|Berlin|Madrid|Oslo|Vienna|Prague|Dublin|Copenhagen|Helsinki|Porto|Milan|
Rotterdam|Edinburgh|Krakow|Seville|Zurich|Montreal|Toronto|Vancouver|Chicago|Denver|Austin|
Seattle|Boston|New York|San Francisco|Buenos Aires|Mexico City|Cape Town|Nairobi|Singapore|
Melbourne|Auckland|Kyoto|Osaka|Seoul|Tallinn|Riga|Valencia|Bologna|Ghent|Bergen|Reykjavik|
Marseille|Hamburg""".replace("\n", "").split("|")
COMPANIES = """Acme Corp|Initech|Globex|Hooli|Umbrella Health|Stark Logistics|Wayne Foods|
Pied Piper|Vandelay Imports|Soylent Labs|Cyberdyne Systems|Tyrell Analytics|Aperture Science|
Gringotts Bank|Monarch Solar|Oscorp|Dunder Mifflin|Nakatomi Trading|Wonka Industries|
Massive Dynamic|Blue Sun|Prestige Worldwide|Virtucon|Bluth Company|Sirius Cybernetics|
Black Mesa|Weyland Freight|Gekko Partners|Strickland Propane|Buy More|Paper Street Soap|
Oceanic Air|Rekall|Los Pollos Hermanos|Krusty Krab|Duff Brewing|Planet Express|
Ollivanders|Good Burger|Kwik-E-Mart""".replace("\n", "").split("|")
TITLES = """data engineer|product manager|staff engineer|engineering manager|ux designer|
senior designer|site reliability engineer|data scientist|sales director|head of marketing|
account executive|backend developer|frontend developer|qa lead|solutions architect|
principal engineer|research scientist|operations manager|chief of staff|technical writer|
support engineer|security analyst|devops engineer|team lead|chief technology officer|
vp of engineering|
financial analyst|recruiter|office manager|nurse practitioner""".replace("\n", "").split("|")
DATABASES = listed(
    """PostgreSQL MySQL MongoDB SQLite Cassandra Redis DynamoDB CockroachDB
ClickHouse MariaDB Neo4j Elasticsearch"""
)

PREDICATE_OF = {"lives_in": CITIES, "works_for": COMPANIES, "job_title": TITLES}
OBJECT_TYPE = {
    "lives_in": "place",
    "works_for": "organisation",
    "job_title": None,
    "uses_database": "tool",
}
START = datetime(2019, 1, 1, tzinfo=UTC)

# --- phrasing: {s} subject, {v} value, {w} a date phrase ("last month"), {org} employer ------
# Each template is (phrasing, needs a date phrase, text). Canonical: the shapes the issue
# names; varied: how people also say it.
Template = tuple[str, bool, str]
FIRST_PERSON: dict[str, list[Template]] = {
    "lives_in": [
        ("canonical", True, "I moved to {v} {w}."),
        ("canonical", False, "I just moved to {v}."),
        ("canonical", False, "I live in {v} now."),
        ("canonical", True, "I relocated to {v} {w} for a change of scenery."),
        ("varied", True, "Finally settled into my new flat in {v} {w}."),
        ("varied", True, "{W}, I packed everything up and headed to {v}."),
        ("varied", False, "Home is {v} these days."),
        ("varied", True, "Writing this from my new place in {v}; the move happened {w}."),
    ],
    "works_for": [
        ("canonical", True, "I started a new job at {v} {w}."),
        ("canonical", False, "I work at {v} now."),
        ("canonical", True, "I joined {v} {w}."),
        ("varied", True, "Signed my contract with {v} {w}, and the first day went great."),
        ("varied", False, "My new employer is {v}."),
        ("varied", False, "These days I'm on the payroll at {v}."),
        ("varied", False, "Just finished my first week at {v}."),
    ],
    "job_title": [
        ("canonical", False, "I'm a {v} at {org} now."),
        ("canonical", False, "I work as a {v} now."),
        ("canonical", True, "I got promoted to {v} {w}."),
        ("varied", True, "My role changed {w}: I'm the team's {v} now."),
        ("varied", True, "They made me {v} {w}."),
        ("varied", False, "New title on my business cards: {v}."),
    ],
}
THIRD_PERSON: dict[str, list[Template]] = {
    "lives_in": [
        ("canonical", True, "{s} moved to {v} {w}."),
        ("canonical", False, "{s} lives in {v} now."),
        ("canonical", True, "My friend {s} relocated to {v} {w}."),
        ("varied", False, "{s} is a {v} resident now."),
        ("varied", False, "Heard from {s}; they're in {v} these days."),
        ("varied", True, "{s} bought an apartment in {v} {w} and settled there."),
        ("varied", True, "{s} packed up and left for {v} {w}."),
    ],
    "works_for": [
        ("canonical", False, "{s} works at {v} now."),
        ("canonical", True, "{s} joined {v} {w}."),
        ("canonical", True, "{s} started a new job at {v} {w}."),
        ("varied", True, "{v} hired {s} {w}."),
        ("varied", False, "{s}'s badge says {v} now."),
        ("varied", False, "{s} is with {v} these days."),
        ("varied", True, "{s} took a job with {v} {w}."),
    ],
    "job_title": [
        ("canonical", False, "{s} is a {v} at {org} now."),
        ("canonical", False, "{s} works as a {v}."),
        ("varied", True, "{s} was promoted to {v} {w}."),
        ("varied", True, "{s} stepped into the {v} role {w}."),
        ("varied", False, "{s}'s title is {v} now."),
        ("varied", False, "Congrats to {s}, our new {v}!"),
    ],
    "uses_database": [
        ("canonical", False, "We use {v} for project {s}."),
        ("canonical", False, "Project {s} uses {v} now."),
        ("canonical", True, "We switched project {s} to {v} {w}."),
        ("varied", True, "{W}, we finished moving {s}'s data over to {v}."),
        ("varied", False, "The {s} backend talks to {v} now."),
        ("varied", False, "{v} is the database behind {s} these days."),
        ("varied", True, "The {s} team migrated to {v} {w}."),
    ],
}
# A correction restates the right value R against the wrong one X.
STATEMENT = {
    ("lives_in", True): "I live in {v}",
    ("works_for", True): "I work at {v}",
    ("job_title", True): "I work as a {v}",
    ("lives_in", False): "{s} lives in {v}",
    ("works_for", False): "{s} works at {v}",
    ("job_title", False): "{s} works as a {v}",
    ("uses_database", False): "project {s} uses {v}",
}
CORRECTIONS: list[tuple[str, str]] = [
    ("canonical", "Actually, {stmt}, not {x}."),
    ("canonical", "Correction: {stmt}."),
    ("canonical", "No, I meant {v}: {stmt}."),
    ("varied", "Sorry, I got that wrong; it's {v}, not {x}."),
    ("varied", "Oops, I mixed that up: {v} is right, {x} was a slip."),
]


@dataclass
class Turn:
    subject: dict[str, Any]
    speaker: str | None
    timestamp: datetime
    text: str
    phrasing: str
    date_form: str
    value: str
    valid_from: datetime
    corrects: bool = False
    misstated: bool = False

    def to_json(self, number: int) -> dict[str, Any]:
        entity = self.subject["object_type"] is not None
        return {
            "id": f"t{number:04d}",
            "subject": self.subject["id"],
            "speaker": self.speaker,
            "timestamp": iso(self.timestamp),
            "text": self.text,
            "phrasing": self.phrasing,
            "date_form": self.date_form,
            "corrects": self.corrects,
            "misstated": self.misstated,
            "triple": {
                "subject": self.subject["name"],
                "predicate": self.subject["predicate"],
                "object": self.value if entity else None,
                "value": None if entity else self.value,
                "valid_from": iso(self.valid_from),
            },
        }


@dataclass
class Subject:
    data: dict[str, Any]
    turns: list[Turn] = field(default_factory=list)


def with_an(text: str) -> str:
    return re.sub(r"\ba(?= [aeiou])", "an", text)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


_NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six"]


def date_phrase(rng: random.Random, change: datetime, said: datetime) -> tuple[str, str]:
    """(form, phrase) for a change on ``change`` told at ``said``."""
    days = (said.date() - change.date()).days
    if rng.random() < 0.45:
        if rng.random() < 0.5:
            return "absolute", f"on {change.day} {change:%B %Y}"
        return "absolute", f"in {change:%B %Y}"
    previous_month = (said.replace(day=1) - timedelta(days=1)).replace(day=1)
    if days == 1:
        return "relative", "yesterday"
    if days < 7:
        return "relative", f"{_NUMBER_WORDS[days]} days ago"
    if (change.year, change.month) == (previous_month.year, previous_month.month):
        return "relative", "last month"
    weeks = round(days / 7)
    return "relative", "a week ago" if weeks == 1 else f"{_NUMBER_WORDS[weeks]} weeks ago"


def make_subjects(rng: random.Random) -> list[dict[str, Any]]:
    predicates = ["lives_in"] * 30 + ["works_for"] * 30 + ["job_title"] * 30
    subjects: list[dict[str, Any]] = []
    for index, (name, predicate) in enumerate(zip(PEOPLE, predicates, strict=False)):
        subjects.append({"name": name, "kind": "person", "predicate": predicate})
        if predicate == "job_title":
            subjects[-1]["employer"] = rng.choice(COMPANIES)
        subjects[-1]["id"] = f"s{index + 1:03d}"
    for index, name in enumerate(PROJECTS, start=len(subjects) + 1):
        subjects.append(
            {"id": f"s{index:03d}", "name": name, "kind": "project", "predicate": "uses_database"}
        )
    for subject in subjects:
        subject["object_type"] = OBJECT_TYPE[subject["predicate"]]
    return subjects


def make_timeline(rng: random.Random, subject: dict[str, Any]) -> list[tuple[str, datetime]]:
    pool = PREDICATE_OF.get(subject["predicate"], DATABASES)
    values = rng.sample(pool, rng.randint(2, 5))
    moment = START + timedelta(days=rng.randint(0, 500), hours=rng.randint(8, 20))
    timeline = []
    for value in values:
        timeline.append((value, moment))
        moment += timedelta(days=rng.randint(120, 330), hours=rng.randint(-4, 4))
    return timeline


def tell(rng: random.Random, subject: dict[str, Any], value: str, change: datetime) -> Turn:
    """One turn telling that ``subject`` took ``value`` at ``change``."""
    first_person = subject["kind"] == "person" and rng.random() < 0.5
    pool = (FIRST_PERSON if first_person else THIRD_PERSON)[subject["predicate"]]
    phrasing, dated, template = rng.choice(pool)
    if dated:
        said = change + timedelta(days=rng.randint(1, 40), hours=rng.randint(0, 3))
        form, phrase = date_phrase(rng, change, said)
    else:
        said, form, phrase = change, "none", ""
    text = template.format(
        s=subject["name"], v=value, w=phrase, W=phrase[:1].upper() + phrase[1:],
        org=subject.get("employer", ""),
    )  # fmt: skip
    speaker = subject["name"] if first_person else None
    return Turn(subject, speaker, said, with_an(text), phrasing, form, value, change)


def correct(rng: random.Random, wrong: Turn, right: str) -> Turn:
    """The turn after ``wrong`` that puts ``right`` in place of what it said."""
    phrasing, template = rng.choice(CORRECTIONS)
    first_person = wrong.speaker is not None
    statement = STATEMENT[(wrong.subject["predicate"], first_person)].format(
        s=wrong.subject["name"], v=right
    )
    text = with_an(template.format(stmt=statement, v=right, x=wrong.value))
    said = wrong.timestamp + timedelta(days=rng.randint(1, 9), hours=rng.randint(0, 5))
    return Turn(
        wrong.subject, wrong.speaker, said, text, phrasing, wrong.date_form, right,
        wrong.valid_from, corrects=True,
    )  # fmt: skip


def subject_turns(
    rng: random.Random, subject: dict[str, Any], timeline: list[tuple[str, datetime]]
) -> list[Turn]:
    turns: list[Turn] = []
    misstated = rng.randrange(len(timeline)) if rng.random() < 0.27 else None
    pool = PREDICATE_OF.get(subject["predicate"], DATABASES)
    for index, (value, change) in enumerate(timeline):
        if index != misstated:
            turns.append(tell(rng, subject, value, change))
            continue
        wrong_value = rng.choice([v for v in pool if v not in {x for x, _ in timeline}])
        wrong = tell(rng, subject, wrong_value, change)
        wrong.misstated = True
        turns += [wrong, correct(rng, wrong, value)]
    return turns


def questions(subject: Subject, timeline: list[tuple[str, datetime]]) -> list[dict[str, Any]]:
    name, predicate = subject.data["name"], subject.data["predicate"]
    asked: list[tuple[str, datetime | None, str]] = [("current", None, timeline[-1][0])]
    for (value, start), (_, end) in pairwise(timeline):
        asked.append(("valid_at", start + (end - start) / 2, value))
    believed = subject.turns
    for before, after in pairwise(believed):
        moment = before.timestamp + (after.timestamp - before.timestamp) / 2
        asked.append(("known_at", moment, before.value))
    return [
        {
            "subject": subject.data["id"],
            "entity": name,
            "predicate": predicate,
            "kind": kind,
            "at": iso(at) if at else None,
            "answer": answer,
        }
        for kind, at, answer in asked
    ]  # fmt: skip


def build() -> dict[str, Any]:
    rng = random.Random(SEED)
    subjects, turns, asked = [], [], []
    for data in make_subjects(rng):
        timeline = make_timeline(rng, data)
        subject = Subject(data, subject_turns(rng, data, timeline))
        data["timeline"] = [{"value": v, "valid_from": iso(t)} for v, t in timeline]
        subjects.append(data)
        turns += subject.turns
        asked += questions(subject, timeline)
    turns.sort(key=lambda t: (t.timestamp, t.subject["id"]))
    for number, question in enumerate(asked, start=1):
        question["id"] = f"q{number:04d}"
    return {
        "description": __doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else "",
        "generator": "bench/data/make_knowledge_updates.py",
        "seed": SEED,
        "user_id": USER_ID,
        "subjects": subjects,
        "turns": [turn.to_json(number) for number, turn in enumerate(turns, start=1)],
        "questions": [{"id": q.pop("id"), **q} for q in asked],
    }


def main() -> None:
    data = build()
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    kinds = [q["kind"] for q in data["questions"]]
    print(
        f"{OUT.name}: {len(data['subjects'])} subjects, {len(data['turns'])} turns "
        f"({sum(t['corrects'] for t in data['turns'])} corrections), "
        + ", ".join(f"{kinds.count(k)} {k}" for k in ("current", "valid_at", "known_at"))
        + " questions"
    )


if __name__ == "__main__":
    main()
