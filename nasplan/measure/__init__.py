"""Measurements: one module per kind (iperf3, ...): pure argv and parse, one I/O function."""
