"""The package version, kept in the core so that every layer (telemetry's tracer) can read it."""

__version__ = "0.1.0"
