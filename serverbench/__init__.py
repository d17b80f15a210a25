"""serverbench: a reproducible benchmark of HTTP servers' concurrency models."""

__version__ = "0.1.0"
