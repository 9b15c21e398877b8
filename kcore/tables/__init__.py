"""Topics written as Apache Iceberg tables (docs/tables.md).

A topic with ``kcore.table.mode`` other than ``off`` is copied, by the
leader of each of its partitions, into the Iceberg table ``kcore.<topic>``
of the broker's catalog: every committed record (below the last stable
offset, aborted transactions left out) once, in a background task that
reads the local log and hands the decoding and the Parquet writing to one
worker thread. Each table snapshot records, per topic partition, the next
offset the table is missing (``kcore.offsets`` in its summary), so a
restart, a crash in the middle of a commit or a leadership move resumes
exactly there: a commit is optimistic (Iceberg's check that the table did
not change under it, with no automatic retry) and a writer whose base no
longer matches drops what it read and reads again from the table's offset.

Modules: ``settings`` (what a topic asks for), ``rows`` (records to Arrow),
``value_schema`` (values decoded through the schema registry into their
schema's columns, for ``value_schema`` tables), ``catalog`` (pyiceberg:
the catalog, the table, the offsets, the commit), ``writer`` (one topic's
reading and committing), ``service`` (the broker's writers and their
figures).

Layer: above the schema registry and replication, below the handlers; the
broker wires it (kcore/server/broker.py).
"""
