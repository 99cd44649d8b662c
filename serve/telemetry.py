"""Where ``toolwire serve`` sends its spans and metrics: any OTLP/HTTP collector.

The library never installs a global OpenTelemetry provider; the server is an application, so it
builds its own pair, exporting over OTLP/HTTP (Phoenix, Jaeger, Tempo, an OpenTelemetry
Collector...), and hands them to the healing. Nothing is exported when no endpoint is set.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from ..core.errors import ConfigurationError

__all__ = ["OtlpProviders", "check_otlp_sdk", "otlp_endpoint", "otlp_providers"]

#: A tracer provider, a meter provider and what flushes and stops both.
OtlpProviders = tuple[TracerProvider, MeterProvider, Callable[[], None]]


def otlp_endpoint(configured: str | None) -> str | None:
    """The collector's base URL: the setting, else ``OTEL_EXPORTER_OTLP_ENDPOINT``, else none."""
    return configured or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None


def check_otlp_sdk(endpoint: str) -> None:
    """Raise :class:`ConfigurationError` when exporting to ``endpoint`` cannot work.

    Called before the server starts, so a missing package is a usage error, not a worker that
    fails after the fork (the providers themselves are made in each worker: their export
    threads would not survive a fork).
    """
    try:
        import opentelemetry.exporter.otlp.proto.http
        import opentelemetry.sdk  # noqa: F401
    except ImportError as error:
        raise ConfigurationError(
            f"exporting to {endpoint} needs opentelemetry-sdk and "
            f"opentelemetry-exporter-otlp-proto-http (the [serve] extra): {error}"
        ) from None


def otlp_providers(
    endpoint: str,
    service_name: str = "toolwire-serve",
    *,
    attributes: Mapping[str, str | int] | None = None,
) -> OtlpProviders:
    """Providers that export to ``endpoint`` (``/v1/traces`` and ``/v1/metrics`` under it).

    ``attributes`` join ``service.name`` on the resource: ``toolwire serve`` names each worker
    process there (``service.instance.id``), so the counters of two workers are two series,
    not one that goes back and forth.
    """
    check_otlp_sdk(endpoint)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    base = endpoint.rstrip("/")
    resource = Resource.create({**(attributes or {}), "service.name": service_name})
    tracer_provider = SdkTracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces"))
    )
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{base}/v1/metrics"), export_interval_millis=10_000
    )
    meter_provider = SdkMeterProvider(resource=resource, metric_readers=[reader])

    def shutdown() -> None:
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return tracer_provider, meter_provider, shutdown
