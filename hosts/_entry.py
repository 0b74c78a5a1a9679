"""The ``turn-hooks`` program's front door: host hooks try the resident server first.

``turn-hooks host ...`` runs on every Turn. This module imports nothing beyond what a
bare interpreter has loaded, decides whether the call is a host hook, and if so asks
the resident server (:mod:`hosts._warm`) to run it. Every other command, and every
hook the server does not take (none running, busy, broken, switched off with
``TURN_HOOKS_RESIDENT=0``), runs the ordinary command line here, in this process:
the cold path, with the same outputs.
"""

# No ``from __future__ import annotations``: this runs on every Turn, and the
# __future__ module is one import a bare interpreter does not make.
import sys


def main() -> int:
    """Run one ``turn-hooks`` command and return its exit status."""
    argv = list(sys.argv)
    if argv[1:2] == ["host"]:
        from hosts import _warm

        if _warm.enabled(argv[1:]):
            status = _warm.call(argv)
            if status is not None:
                _warm.flush_notes(argv)
                return status
        from hosts.cli import main as cold

        status = cold(argv[1:])
        _warm.flush_notes(argv)
        return status
    from hosts.cli import main as cold

    return cold(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
