"""Runnable example models (python -m mlbridge.examples.<name>)."""
