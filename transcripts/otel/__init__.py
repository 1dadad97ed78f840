"""OpenTelemetry GenAI ingest: OTLP spans of instrumented agents into the message tree."""
