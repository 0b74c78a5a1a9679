"""Host runtime adapters and the ``turn-hooks`` command line.

Hosts drive the plugin manager; capabilities reach them only through entry points,
so nothing here imports ``capabilities``.
"""
