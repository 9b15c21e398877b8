"""Compiled kernels built from native/*.pyx (see setup.py), the RecordBatch
v2 layout they share with Python (``batch_layout``), and their pure-Python
twins (``twin``, one module per kernel module, same stem).

Each kernel takes buffers, ints and file descriptors and returns ints,
tuples, memoryviews or the small named values ``records.BatchHeader`` and
``records.RecordSpan``; none of them imports kcore.
"""
