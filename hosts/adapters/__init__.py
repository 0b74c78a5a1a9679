"""Per-host adapters: the hook events of each host turned into Turns, and the MCP server.

Above ``setup`` (a Turn asks whether our tool channel is wired), ``settlement`` and
``facts``; the command line drives them.
"""
