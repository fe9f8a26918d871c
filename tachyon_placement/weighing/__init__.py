"""Weighers: the order of allocation candidates, kept as data.

Placement lists allocation candidates in a fixed order of its own; Nova
keeps the first ``limit`` of them (``max_placement_results``) and claims
the first allocation request of the host it picks, so that order decides
which hosts Nova considers at all.  A weigher, stored in the graph and
managed through Tachyon's own API (``/tachyon/weighers``), gives every
candidate root a score; the scores are normalised and combined as Nova
combines its scheduler weighers, and the candidate search visits the
anchors best first, so a ``limit`` still stops it early.  No weigher that
matches a request: Placement's order, exactly.

Weighers are not the oslo.policy rules of ``tachyon_placement/policies``
(who may call which route): they are scheduling preferences, hence their
name, borrowed from Nova's scheduler.

Pure Python, no I/O: ``graph/weighers.py`` stores them, the candidate
handler asks ``ranking.order`` for the visiting order.
"""
