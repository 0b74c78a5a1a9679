"""Work a hook call finishes after its host has the answer.

A host waits for the hook process it started. In a resident server's child
(:mod:`hosts._resident`) that wait ends when the child reports the exit status to
its client, not when the child exits, so work that neither the hook's output nor
the rest of the Turn waits for can run after the report: the detached settlement
of a Stop hook (which a cold process hands to a forked child, a fork of the whole
server's size on the Turn's path) and the hook log's entries (a locked, fsynced
sidecar write). The child tells its server first, so the server no longer counts
it as a call (no deadline kill, no kill when its client exits), and its standard
streams go to ``/dev/null``, so a host reading the hook's output to its end is not
held up by it.

Everywhere else (a cold hook process, a test, a host calling in process) nothing
is queued: :func:`defer` returns ``False`` and the caller does the work at once, as
it always did.

The queue runs after the call's exit steps, as a cold process takes them before it
exits (non-daemon threads joined, ``atexit`` handlers run): so the output a host
sees is the whole of it. Work queued here may start threads and processes, but not
a ``concurrent.futures`` pool (which refuses after those steps), and cannot count on
a ``weakref.finalize`` running.
"""

from __future__ import annotations

from collections.abc import Callable

_queue: list[Callable[[], object]] | None = None
"""The work queued by this call, or ``None`` when this process cannot reply early."""
_on_first: Callable[[], object] | None = None
"""What :func:`accept` was told to do when the first work is queued."""


def accepting() -> bool:
    """Whether this process can answer its host before it finishes its work."""
    return _queue is not None


def defer(work: Callable[[], object]) -> bool:
    """Queue ``work`` to run once the host has the answer; ``False`` if this process
    cannot answer first (the caller then runs it now)."""
    global _on_first
    if _queue is None:
        return False
    _queue.append(work)
    if _on_first is not None:
        first, _on_first = _on_first, None
        first()
    return True


def accept(on_first: Callable[[], object] | None = None) -> None:
    """Let this call queue work for after its reply (the resident child's call only);
    ``on_first`` runs when the first work is queued."""
    global _queue, _on_first
    _queue, _on_first = [], on_first


def leave() -> None:
    """Forget the work this process queued: a child forked from it (a settler) replies
    to no one, so nothing it logs may wait for a reply, and the parent's queue is the
    parent's to run."""
    global _queue, _on_first
    _queue, _on_first = None, None


def pending() -> bool:
    """Whether work waits for the reply."""
    return bool(_queue)


def run() -> None:
    """Run the queued work in order; never raises.

    From here nothing more is queued: the reply has gone, so :func:`defer` returns
    ``False`` and its caller does the work at once (a settlement's own hook log
    entries). One item failing does not cost the others: each owns its own recovery
    (a settlement left unfinished keeps its queue marker, which the next PreTurn's
    worker carries on).
    """
    global _queue, _on_first
    work, _queue, _on_first = _queue or [], None, None
    for item in work:
        try:
            item()
        except Exception:  # nothing is left to report to: see above
            continue
