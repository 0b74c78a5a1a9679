"""Source of a dict-backed provider that runs inside the oracle interpreter.

It is our own small test double, written against the oracle's provider dataclasses,
so the oracle's ingest and recall can run deterministically without the `ov` CLI.
"""

MEM_PROVIDER = """
from loopx.capabilities.context_providers.base import (
    ContextProviderItem, ContextProviderRetrieval, ContextProviderSync)

class MemProvider:
    provider_id = "openviking"

    def __init__(self, store=None, fail_write=False):
        self.store = dict(store or {})
        self.calls = []
        self.fail_write = fail_write

    def _sync(self, namespace, resources, observed_at, **fields):
        return ContextProviderSync(provider="openviking", namespace=namespace,
            observed_at=observed_at, requested_count=len(resources), **fields)

    def sync(self, *, namespace, resources, timeout_seconds, observed_at, execute):
        self.calls.append("sync")
        if not execute:
            return self._sync(namespace, resources, observed_at, status="preflight_ready",
                completed_count=0, reason_code="execute_required_for_verified_write",
                retry_disposition="execute_required")
        if self.fail_write:
            return self._sync(namespace, resources, observed_at, status="partial",
                completed_count=0, reason_code="provider_sync_write_failed_absent",
                retry_disposition="safe_to_retry")
        writes = 0
        refs = []
        for source, uri in resources:  # (local file holding the body, target URI)
            if uri not in self.store:
                self.store[uri] = Path(source).read_text(encoding="utf-8").strip()
                writes += 1
            refs.append(uri)
        return self._sync(namespace, resources, observed_at, status="completed",
            completed_count=len(resources), write_count=writes, result_refs=tuple(refs))

    def retrieve(self, *, namespace, scope_ref, query, query_summary, max_results,
                 timeout_seconds, observed_at):
        self.calls.append("retrieve")
        prefix = scope_ref.rstrip("/") + "/"
        items = tuple(ContextProviderItem(resource_ref=uri, summary="", content=text)
                      for uri, text in sorted(self.store.items()) if uri.startswith(prefix))
        return ContextProviderRetrieval(provider="openviking", namespace=namespace,
            status="completed", query_summary=query_summary, observed_at=observed_at,
            search_performed=True, read_performed=bool(items), items=items[:max_results],
            requested_limit=max_results)
"""
