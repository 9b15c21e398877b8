"""``kcore.spark``: Spark reads and writes Kafka topics through a Python
data source registered as format "kcore", with the options and the schema
of Spark's own Kafka connector, so an existing Spark Kafka job changes only
its format name (no JVM connector to download).

    from kcore.spark import register
    register(spark)
    df = (spark.read.format("kcore").option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders").load())

Spark also finds the source by itself where kcore is installed as a
package (the top-level module ``pyspark_kcore``). Needs the ``spark``
extra (pyspark, pyarrow, pandas, confluent-kafka).
"""
from __future__ import annotations

from typing import Any

from kcore.spark.source import KcoreDataSource

__all__ = ["KcoreDataSource", "register"]


def register(spark: Any) -> None:
    """Make ``spark.read.format("kcore")`` and friends available in ``spark``."""
    spark.dataSource.register(KcoreDataSource)
