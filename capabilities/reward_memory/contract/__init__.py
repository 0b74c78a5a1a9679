"""The contract: reward memory's documents and the rules that make them valid.

Values, identities, the experiment config and its corpora, the reflection and its
experience, and the candidate. Pure data in, data out: nothing here calls a
provider or touches a sidecar, and nothing imports a sibling sub-package, so every
other layer (and LoopX's byte-for-byte comparison) can rely on it alone.
"""
