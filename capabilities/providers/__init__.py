"""Memory providers: the protocol the reward-memory core needs and its implementations.

The only modules capabilities share. Each provider maps its own failures into the
``turn_hooks.errors.ProviderError`` tree at one point.
"""
