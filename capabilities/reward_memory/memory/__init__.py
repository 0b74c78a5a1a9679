"""Memory: guarded recall, verified ingest and the recall hook, over one provider.

The core that reads and writes memories through the provider protocol. It knows
corpora and policies (the contract), not Turns: the Turn layer and the commands
call it with a resolved binding's values.
"""
