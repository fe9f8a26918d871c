"""Tachyon in Nova's scheduler: a weigher that nova-scheduler loads by its
import path (``[filter_scheduler] weight_classes``).

Nova keeps only the set of hosts GET /allocation_candidates returns and
sorts them with its own weighers, so the order Tachyon's weighers give
the candidates survives only through ``limit``.  The weigher here asks
Tachyon, once per weighing, how its stored weighers and telemetry weigh
the hosts Nova's filters kept for that very request, and hands Nova the
scores; Nova normalises them and multiplies them by the weigher's
multiplier as it does its own weighers'.

This room runs inside nova-scheduler, never in Tachyon's API process: it
imports nothing of Tachyon's other rooms, and only ``weigher`` imports
Nova (``options`` is read by the sample configuration generator, where
Nova need not be installed).
"""
