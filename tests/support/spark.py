"""One local[2] Spark session for the whole test run (a session takes
10-15 s to start on this machine), with the kcore data source registered.

The Python workers run this interpreter (the venv with kcore and
confluent-kafka), not whatever ``python3`` is first on PATH: the JVM
starts the data source's planner workers from PYSPARK_PYTHON, which it
inherits from this process (spark.pyspark.python does not reach them)."""
from __future__ import annotations

import os
import sys

from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client

# A streaming query of the tests finishes well within this, even with the
# Python workers starting cold.
QUERY_TIMEOUT_S = 120


def spark_session():
    from pyspark.sql import SparkSession

    from kcore.spark import register
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("kcore-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session


def create_topic(kafka, new_topic) -> None:
    admin = admin_client(kafka.bootstrap)  # alive until the result is in
    admin.create_topics([new_topic])[new_topic.topic].result(ADMIN_TIMEOUT_S)


def read(spark, kafka, **options):
    """A batch read of the "kcore" source with these options."""
    reader = spark.read.format("kcore").option("kafka.bootstrap.servers", kafka.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def stream(spark, kafka, topic: str, **options):
    """A streaming read of ``topic`` through the "kcore" source."""
    reader = (spark.readStream.format("kcore").option("kafka.bootstrap.servers", kafka.bootstrap)
              .option("subscribe", topic))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()
