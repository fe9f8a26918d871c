"""What an operator sees of a running Tachyon: Prometheus metrics
(metrics.py), recorded by the rooms through small functions that do
nothing until the process enables them ([metrics] enabled), and the WSGI
layers that time requests and answer the scrape (middleware.py).

A leaf room: it imports nothing of Tachyon, so every room may record
into it.
"""
