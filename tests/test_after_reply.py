"""hosts.settlement.after_reply: work queued after a resident call's reply, else done at once."""

from __future__ import annotations

import pytest

from hosts.settlement import after_reply


@pytest.fixture(autouse=True)
def _no_queue():
    yield
    after_reply._queue = None  # a test that accepted leaves no queue behind


def test_a_process_that_cannot_reply_first_runs_the_work_itself():
    assert not after_reply.accepting()
    assert after_reply.defer(lambda: None) is False
    assert not after_reply.pending()


def test_queued_work_runs_in_order_and_one_failure_costs_the_rest_nothing():
    done: list[str] = []

    def failing() -> None:
        done.append("failing")
        raise OSError("a full disk")

    after_reply.accept()
    assert after_reply.accepting() and not after_reply.pending()
    assert after_reply.defer(lambda: done.append("first"))
    assert after_reply.defer(failing)
    assert after_reply.defer(lambda: done.append("last"))
    assert after_reply.pending()
    after_reply.run()
    assert done == ["first", "failing", "last"]
    assert not after_reply.accepting(), "the reply is sent: nothing waits for it any more"


def test_work_deferred_while_the_queue_runs_is_the_callers_to_do_at_once():
    """The reply has gone by then: a settlement's own hook log entry is written as it
    comes, not queued behind a queue that is no longer run."""
    done: list[str] = []

    def queues_more() -> None:
        queued = after_reply.defer(lambda: done.append("more"))
        done.append(f"queued={queued}")

    after_reply.accept()
    after_reply.defer(queues_more)
    after_reply.run()
    assert done == ["queued=False"]


def test_the_first_work_queued_runs_the_callers_hook_once():
    """The resident child shelters the call from the host's stop signals from then on."""
    told: list[str] = []
    after_reply.accept(on_first=lambda: told.append("first"))
    assert told == [], "nothing queued yet"
    after_reply.defer(lambda: None)
    after_reply.defer(lambda: None)
    assert told == ["first"]
    after_reply.run()
    after_reply.accept()
    after_reply.defer(lambda: None)
    assert told == ["first"], "a later call's queue does not run an earlier call's hook"
