"""Host runtime adapters and the ``turn-hooks`` command line.

Hosts drive the plugin manager; capabilities reach them only through entry points,
so nothing here imports ``capabilities``.

Rooms, each a sub-package with one job, importing only downwards
(``tests/test_layers.py`` holds the rules): ``cli`` (the command line), ``adapters``
(per-host adapters and the MCP server), ``setup`` (install, plugins, doctor, status),
``settlement`` (the settlement pipeline), ``facts`` (what each host is given). The
front door stays here, at paths installed hooks name: ``_entry`` (every hook call),
``_warm`` (its resident-server client) and ``_resident`` (the server).
"""
