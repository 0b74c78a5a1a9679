"""The ``turn-hooks`` program's front door: host hooks try the resident server first.

``turn-hooks host ...`` runs on every Turn, and ``turn-hooks mcp serve`` once per host
session (once per ``codex exec``). This module imports nothing beyond what a bare
interpreter has loaded, decides whether the call is one of those, and if so asks
the resident server (:mod:`hosts._warm`) to run it. Every other command, and every
call the server does not take (none running, busy, broken, switched off with
``TURN_HOOKS_RESIDENT=0``), runs the ordinary command line here, in this process:
the cold path, with the same outputs.

Installed hooks run it under ``-S``: ``python -S -c "<loader>" host ...``
(:func:`hosts.setup._hook_line.entry_argv`), where the loader puts the package root first
on the path and calls :func:`run`. ``-S`` defers the ``site`` module: its ``.pth``
files and site-packages cost about 10 ms, a third of the interpreter's start, and
the call the server takes needs none of it. The cold path imports ``site`` first
(:func:`full_site`), so it runs exactly as under ``python -m hosts._entry``. ``-c``
also spares ``runpy``, which ``-m`` imports (about 5 ms).
"""

# No ``from __future__ import annotations``: this runs on every Turn, and the
# __future__ module is one import a bare interpreter does not make.
import sys


def full_site() -> None:
    """Import ``site`` when the interpreter was started without it (``-S``).

    Afterwards ``sys.path`` holds site-packages, the user site and the ``.pth``
    entries, as in an interpreter started normally: what the cold path imports
    (pydantic, plugins' distributions) is found where it always is.
    """
    if sys.flags.no_site and "site" not in sys.modules:
        import site

        site.main()


def main() -> int:
    """Run one ``turn-hooks`` command and return its exit status."""
    argv = list(sys.argv)
    if argv[1:2] == ["host"] or argv[1:3] == ["mcp", "serve"]:  # _warm.served
        from hosts import _warm

        if _warm.enabled(argv[1:], site_deferred=sys.flags.no_site == 1):
            status = _warm.call(argv)
            if status is not None:
                if _warm.has_notes():
                    full_site()
                    _warm.flush_notes(argv)
                return status
        full_site()
        from hosts.cli.command import main as cold

        status = cold(argv[1:])
        _warm.flush_notes(argv)
        return status
    full_site()
    from hosts.cli.command import main as cold

    return cold(argv[1:])


def run() -> None:
    """The loader's call: run :func:`main`, then exit with its status.

    After a call the server ran, this process wrote nothing (the server's child
    wrote to the host's streams itself) and holds nothing to clean up, so it ends
    with ``os._exit``: interpreter shutdown costs several milliseconds per Turn. A
    cold run exits normally, flushing its streams and running its exit handlers.
    """
    status = main()
    if "hosts.cli.command" in sys.modules:
        sys.exit(status)
    import posix  # loaded already: ``os`` is not, under ``-S``

    sys.stdout.flush()
    sys.stderr.flush()
    posix._exit(status)


if __name__ == "__main__":
    run()
