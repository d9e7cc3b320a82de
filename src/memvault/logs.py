"""Log lines as JSON objects (or, on a terminal, readable text), each stamped with the request
it belongs to, and with the trace and span ids of the span active when it was made (when
tracing is on: memvault/tracing.py).

Every log call in memvault passes codes, counts, ids and class names — never memory content,
keys or secrets — so a log line is safe to ship anywhere. The request id comes from a context
variable the API sets per request (and echoes as ``X-Request-ID``).
"""

from __future__ import annotations

import json
import logging
import re
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from memvault import tracing

request_id: ContextVar[str | None] = ContextVar("memvault_request_id", default=None)

# Attributes every LogRecord has; anything else was passed with ``extra=`` and is logged.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


# uvicorn attaches a coloured copy of some messages; escape codes are noise in any sink.
_DROPPED = frozenset({"color_message"})
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

_make_record = logging.getLogRecordFactory()


def _stamped_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    # Stamped when the record is made, inside the request, not when a handler formats it.
    record = _make_record(*args, **kwargs)
    record.request_id = request_id.get()
    ids = tracing.current_ids()
    if ids is not None:  # the trace this line belongs to, to find it in a trace backend
        record.trace_id, record.span_id = ids
    return record


logging.setLogRecordFactory(_stamped_record)


def _plain(value: Any) -> Any:
    return _ANSI.sub("", value) if isinstance(value, str) else value


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    """What the call passed with ``extra=``, without terminal colour codes."""
    return {
        k: _plain(v)
        for k, v in vars(record).items()
        if k not in _STANDARD and k not in _DROPPED and v is not None
    }


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": _plain(record.getMessage()),
        }
        entry.update(_extras(record))
        if record.exc_info and record.exc_info[0] is not None:
            # The exception's class only: its message or traceback may hold data.
            entry["exception"] = record.exc_info[0].__name__
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    """One readable line: local time, level, message, then the other extra fields as key=value."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        message = _plain(record.getMessage())
        # A field the message already spells out ("GET /v1/memories 200") is not repeated.
        extras = _extras(record)
        for name in ("request_id", "trace_id", "span_id"):  # last: long and rarely read
            extras[name] = extras.pop(name, None)
        fields = " ".join(
            f"{k}={v}" for k, v in extras.items() if v is not None and str(v) not in message
        )
        line = f"{moment} {record.levelname:<7} {message}"
        if record.exc_info and record.exc_info[0] is not None:
            fields = f"{fields} exception={record.exc_info[0].__name__}".strip()
        return f"{line}  {fields}" if fields else line


def wants_json(log_format: str, legacy_json: bool | None, *, tty: bool) -> bool:
    """``log_format`` decides; under "auto" the older MEMVAULT_LOG_JSON switch, when set, does;
    else JSON unless a person is watching the terminal."""
    if log_format != "auto":
        return log_format == "json"
    return legacy_json if legacy_json is not None else not tty


def configure(level: str, *, as_json: bool) -> None:
    """Route memvault's, uvicorn's and the libraries' logs through one handler on stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if as_json else TextFormatter())
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
    # pgserver narrates every initdb and pg_ctl call at INFO, whole outputs included.
    if logging.getLevelName(level) > logging.DEBUG:
        logging.getLogger("pgserver").setLevel(logging.WARNING)


def uvicorn_options() -> dict[str, Any]:
    """For uvicorn.run(...): leave logging as ``configure`` set it. A dictConfig (even an empty
    one) would re-enable uvicorn's access logger, and every request would be logged twice."""
    return {"log_config": None, "access_log": False}
