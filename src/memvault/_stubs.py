"""``python -m memvault._stubs`` writes the type checker's view of ``Memory`` (the blocking twins
``derive_blocking`` makes of ``AsyncMemory``'s coroutine methods); run it after changing one.
``tests/test_structure.py`` fails while the stub is out of date."""

from __future__ import annotations

from memvault._sync import STUB, surface_stub
from memvault.service import AsyncMemory


def main() -> None:
    STUB.write_text(surface_stub(AsyncMemory, "Memory"))


if __name__ == "__main__":
    main()
