"""Adapters: everything in markertools that touches the world (storage, processes, files, CLI)."""
