"""Log lines as JSON objects, each stamped with the request it belongs to.

Every log call in memvault passes codes, counts, ids and class names — never memory content,
keys or secrets — so a log line is safe to ship anywhere. The request id comes from a context
variable the API sets per request (and echoes as ``X-Request-ID``).
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

request_id: ContextVar[str | None] = ContextVar("memvault_request_id", default=None)

# Attributes every LogRecord has; anything else was passed with ``extra=`` and is logged.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


_make_record = logging.getLogRecordFactory()


def _stamped_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    # Stamped when the record is made, inside the request, not when a handler formats it.
    record = _make_record(*args, **kwargs)
    record.request_id = request_id.get()
    return record


logging.setLogRecordFactory(_stamped_record)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(
            {k: v for k, v in vars(record).items() if k not in _STANDARD and v is not None}
        )
        if record.exc_info and record.exc_info[0] is not None:
            # The exception's class only: its message or traceback may hold data.
            entry["exception"] = record.exc_info[0].__name__
        return json.dumps(entry, default=str)


def configure(level: str, *, as_json: bool) -> None:
    """Route memvault's, uvicorn's and the libraries' logs through one handler on stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(
        JsonFormatter() if as_json else logging.Formatter("%(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    # memvault logs each request itself, with its id and route; uvicorn's line would add the
    # raw path and query string.
    logging.getLogger("uvicorn.access").disabled = True


def log_config() -> dict[str, Any]:
    """For uvicorn.run(log_config=...): leave logging as ``configure`` set it."""
    return {"version": 1, "disable_existing_loggers": False}
