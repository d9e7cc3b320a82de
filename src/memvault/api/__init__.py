"""The REST API: thin routes over the service.

``create_app`` is imported when first asked for: importing one of this package's modules
(``memvault.api.limits``, say) does not build the app's imports with it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memvault.api.app import create_app


if not TYPE_CHECKING:  # the type checker reads ``create_app`` above, and refuses any other

    def __getattr__(name: str) -> Any:
        if name == "create_app":
            from memvault.api.app import create_app

            return create_app
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["create_app"]
