"""Curation: people deciding about memories (review, operator control, retirement).

Decisions are records first; only retirement writes, and only as the corpus owner
with exact readback. Never on the hook path.
"""
