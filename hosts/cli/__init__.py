"""The ``turn-hooks`` command line: its parser, its commands' wiring and its receipts.

The top room of ``hosts``: it may import every other room, and none imports it (the
front door, :mod:`hosts._entry`, and the resident server run it).
"""
