"""OpenTelemetry (OTLP) spans read as LLM calls: the span model, the decoder and the conventions."""
