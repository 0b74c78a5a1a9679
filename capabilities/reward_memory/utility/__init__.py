"""Utility: whether recalled memories helped, as observations and their projection.

Observations are advisory and write-free; the reducer is pure. Never on the hook
path.
"""
