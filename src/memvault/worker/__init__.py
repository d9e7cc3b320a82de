"""The background worker: embedding jobs and the periodic sweep."""

from memvault.worker.runner import Worker

__all__ = ["Worker"]
