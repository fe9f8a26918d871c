"""Benchmark harness: Tachyon against upstream Placement (python -m bench)."""
