"""Adapters: turn the stream layers' native formats into events of our vocabulary (pure)."""
