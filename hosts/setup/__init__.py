"""What a person runs around the Turns: install, the host-plugin route, doctor, status.

Writes and reads the hosts' own configuration; imports ``settlement`` and ``facts``,
never an adapter or the command line.
"""
