"""PrefEval preference recall on the development split (../shared/bench/prefeval_dev.json).

    .venv/bin/python bench/prefeval.py [--recipes hybrid vector keyword]

The protocol of ../shared/bench/README.md (every preference stored verbatim as one user's
memory, each question searched in that store, a hit when its own preference is in the top k),
run by bench/recall.py, which measures it beside LoCoMo and the personal-facts set.
"""

from __future__ import annotations

import argparse
import asyncio

from recall import run

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--recipes", nargs="+", default=["hybrid", "vector", "keyword"])
    asyncio.run(run(["prefeval"], parser.parse_args().recipes))
