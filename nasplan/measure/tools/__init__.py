"""One module per external tool: its argv, a pure parser of its output, one I/O call."""
