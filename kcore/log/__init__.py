"""The partition log: segments, sparse indexes, recovery, retention,
checkpoints (Kafka's on-disk layout). See log.py for the Log and manager.py
for the LogManager that owns every partition under log.dirs."""
from kcore.log.config import LogConfig
from kcore.log.errors import CorruptRecordError, KafkaStorageError, LogError, OffsetOutOfRangeError, RecordTooLargeError
from kcore.log.file_slice import FileSlice
from kcore.log.log import AppendInfo, Log
from kcore.log.manager import LogManager

__all__ = ["AppendInfo", "CorruptRecordError", "FileSlice", "KafkaStorageError", "Log", "LogConfig",
           "LogError", "LogManager", "OffsetOutOfRangeError", "RecordTooLargeError"]
