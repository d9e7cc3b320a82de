"""Write tests/module_seconds.json from a run's JUnit report: each test module's seconds, the
order the suite starts its modules in (tests/conftest.py). `make durations` runs it.

    python -m tests.durations report.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

WRITTEN = Path(__file__).with_name("module_seconds.json")


def module_seconds(report: Path) -> dict[str, float]:
    seconds: Counter[str] = Counter()
    for case in ET.parse(report).iter("testcase"):
        # classname is "tests.test_x" or "tests.test_x.TestClass".
        module = ".".join(case.get("classname", "").split(".")[:2])
        seconds[module] += float(case.get("time") or 0)
    return {module: round(total, 1) for module, total in seconds.most_common()}


if __name__ == "__main__":
    WRITTEN.write_text(json.dumps(module_seconds(Path(sys.argv[1])), indent=1) + "\n")
