"""Python tools around the tucoll library: run tucoll-bench, read its results, keep docs true."""

__version__ = "0.1.0"
