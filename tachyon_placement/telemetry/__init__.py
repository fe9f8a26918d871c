"""Telemetry for weighers: metric definitions kept as data, one collector
per deployment that queries Prometheus (or Aetos) in the background and
stores each metric's values per provider with their time, where rankings
read them.  A request never waits on Prometheus: it reads what the
collector stored last, and values older than ``[telemetry]
staleness_limit`` stop counting."""
