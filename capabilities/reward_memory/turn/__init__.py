"""The Turn: what the hooks do before a Turn and after it settles.

PreTurn builds the recall packet and the contribution; PostSettlement turns an
attested reflection into one verified memory through a write-ahead journal, which
reconciliation retries. The Codex App two-phase path lives here for now. Everything
here is on the hook path, so it never imports reports or commands.
"""
