"""v2 RecordBatch builders for tests (kcore.testing.batches)."""
from kcore.testing.batches import build_batch, encode_record, make_batch, random_batch

__all__ = ["build_batch", "encode_record", "make_batch", "random_batch"]
