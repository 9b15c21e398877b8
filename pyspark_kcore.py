"""Spark's discovery hook: at its first use of a Python data source, Spark
imports every top-level module named ``pyspark_*`` and registers its
``DefaultSource`` under that class's name(), here "kcore"."""
from kcore.spark import KcoreDataSource as DefaultSource

__all__ = ["DefaultSource"]
