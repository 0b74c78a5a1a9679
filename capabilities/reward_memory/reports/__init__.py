"""Reports: read models and suites about reward memory, never on the hook path.

The corpus registry and health check, the architecture document, the route check,
the Stage 4 evaluation and the dogfood batch. Each may read every layer below it;
no hook imports them, so their cost never reaches a Turn.
"""
