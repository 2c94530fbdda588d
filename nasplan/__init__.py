"""nasplan: declarative, reproducible network and NAS performance test plans over SSH."""

__version__ = "0.1.0"
