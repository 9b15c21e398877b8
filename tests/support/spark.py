"""One local[2] Spark session for the whole test run (a session takes
10-15 s to start on this machine), with the kcore data source registered.

The Python workers run this interpreter (the venv with kcore and
confluent-kafka), not whatever ``python3`` is first on PATH: the JVM
starts the data source's planner workers from PYSPARK_PYTHON, which it
inherits from this process (spark.pyspark.python does not reach them)."""
from __future__ import annotations

import os
import sys


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
