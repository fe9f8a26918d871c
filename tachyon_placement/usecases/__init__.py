"""Use cases: what a request does when it needs more than one room.

A handler parses and checks a request, then makes one call here; a use
case combines the stores (graph/), the copy of the graph (world/), the
capability rooms (weighing/, telemetry/, topology/) and the domain's rules
(domain/), and hands back what the handler renders.  Nothing below this
layer imports it.
"""
