"""The REST API: thin routes over the service."""

from memvault.api.app import create_app

__all__ = ["create_app"]
