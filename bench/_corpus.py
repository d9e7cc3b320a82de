"""Synthetic but varied short memories and questions for the benchmarks (no data files)."""

from __future__ import annotations

import random

PEOPLE = [
    "Alice",
    "Bob",
    "Chen",
    "Dana",
    "Emeka",
    "Farah",
    "Gus",
    "Hana",
    "Ivo",
    "Jules",
    "Kira",
    "Luis",
    "Mona",
    "Nils",
    "Omar",
    "Pia",
    "Quinn",
    "Rosa",
    "Sami",
    "Tara",
]
FACTS = [
    "prefers {a} over {b}",
    "is allergic to {a}",
    "moved to {c} last {t}",
    "works as a {j} in {c}",
    "has a {p} called {n}",
    "is learning {l} on weekends",
    "asked to be reminded about the {e} on {d}",
    "drinks {a} every morning",
    "booked a trip to {c} for {t}",
    "dislikes {b} and loud music",
    "finished reading a book about {l}",
    "plays {s} with friends on {d}",
]
FILL = {
    "a": ["green tea", "espresso", "oat milk", "peanuts", "sourdough", "dark chocolate"],
    "b": ["coffee", "spicy food", "cold weather", "crowds", "early meetings"],
    "c": ["Lisbon", "Osaka", "Nairobi", "Toronto", "Berlin", "Lima", "Oslo", "Hanoi"],
    "t": ["spring", "summer", "autumn", "winter", "May", "October"],
    "j": ["nurse", "pilot", "data engineer", "teacher", "chef", "architect"],
    "p": ["cat", "dog", "parrot", "rabbit"],
    "n": ["Miso", "Rex", "Kiwi", "Luna", "Pepper"],
    "l": ["Spanish", "the cello", "woodworking", "astronomy", "Rust", "pottery"],
    "e": ["dentist", "tax return", "team offsite", "car service", "birthday dinner"],
    "d": ["Monday", "Friday", "Sunday", "the 3rd", "Thursday"],
    "s": ["chess", "tennis", "football", "board games"],
}
QUESTIONS = [
    "What does {n} like to drink?",
    "Where did {n} move?",
    "What is {n} allergic to?",
    "What pet does {n} have?",
    "When is {n}'s dentist appointment?",
    "What is {n} learning?",
    "Where is {n} travelling?",
    "What does {n} do for work?",
]


def memories(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        fact = rng.choice(FACTS).format(**{k: rng.choice(v) for k, v in FILL.items()})
        out.append(f"{rng.choice(PEOPLE)} {fact} (note {i})")
    return out


def questions(count: int, seed: int = 2) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(QUESTIONS).format(n=rng.choice(PEOPLE)) + f" #{i}" for i in range(count)]
