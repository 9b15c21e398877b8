/*
 * RecordBatch v2 header checks shared by records.pyx and segment.pyx.
 *
 * Layout (KIP-98, Kafka DefaultRecordBatch), big-endian:
 *   0 baseOffset i64 | 8 batchLength i32 (bytes after this field)
 *  12 partitionLeaderEpoch i32 | 16 magic i8 = 2 | 17 crc u32 (CRC-32C)
 *  21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64
 *  35 maxTimestamp i64 | 43 producerId i64 | 51 producerEpoch i16
 *  53 baseSequence i32 | 57 recordsCount i32 | 61 records...
 * The CRC covers attributes..end, so baseOffset and partitionLeaderEpoch can
 * be rewritten in place without recomputing it.
 */
#ifndef KCORE_BATCH_H
#define KCORE_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include "kbytes.h"
#include "crc32c.h"

/* Kafka DefaultRecordBatch names; kcore/_native/batch_layout.py holds the
 * same numbers for Python (a unit test compares the two). */
#define KC_BATCH_HEADER_SIZE 61 /* RECORD_BATCH_OVERHEAD */
#define KC_LOG_OVERHEAD 12 /* baseOffset + batchLength */
#define KC_CURRENT_MAGIC 2

#define KC_BASE_OFFSET_OFFSET 0
#define KC_LENGTH_OFFSET 8
#define KC_PARTITION_LEADER_EPOCH_OFFSET 12
#define KC_MAGIC_OFFSET 16
#define KC_CRC_OFFSET 17
#define KC_ATTRIBUTES_OFFSET 21
#define KC_LAST_OFFSET_DELTA_OFFSET 23
#define KC_BASE_TIMESTAMP_OFFSET 27
#define KC_MAX_TIMESTAMP_OFFSET 35
#define KC_PRODUCER_ID_OFFSET 43
#define KC_PRODUCER_EPOCH_OFFSET 51
#define KC_BASE_SEQUENCE_OFFSET 53
#define KC_RECORDS_COUNT_OFFSET 57
#define KC_RECORDS_OFFSET 61

#define KC_TIMESTAMP_TYPE_MASK 0x08

enum {
    KC_BATCH_OK = 0,
    KC_BATCH_SIZE = 1,   /* shorter than a header, or runs past the data */
    KC_BATCH_MAGIC = 2,
    KC_BATCH_CRC = 3,
    KC_BATCH_COUNT = 4,
};

/* Size of the batch at p from its batchLength field, or -1 when the field is
 * too small to hold a v2 header. Needs 12 readable bytes. */
static inline int64_t kc_batch_size(const unsigned char *p)
{
    int32_t batch_length = (int32_t)kc_load_be32(p + KC_LENGTH_OFFSET);
    if (batch_length < KC_BATCH_HEADER_SIZE - KC_LOG_OVERHEAD)
        return -1;
    return (int64_t)batch_length + KC_LOG_OVERHEAD;
}

/* Size check only: status and *size_out of the batch at p, avail bytes. */
static inline int kc_batch_check_size(const unsigned char *p, size_t avail,
                                      int64_t *size_out)
{
    if (avail < KC_BATCH_HEADER_SIZE)
        return KC_BATCH_SIZE;
    int64_t size = kc_batch_size(p);
    if (size < 0 || (uint64_t)size > avail)
        return KC_BATCH_SIZE;
    *size_out = size;
    return KC_BATCH_OK;
}

/* Record-count rule. check_count: Kafka's produce rule (recordsCount >= 1
 * and lastOffsetDelta == recordsCount - 1); otherwise only recordsCount >= 0
 * and lastOffsetDelta >= 0 (compaction may leave fewer records than offsets). */
static inline int kc_batch_count_ok(const unsigned char *p, int check_count)
{
    int32_t count = (int32_t)kc_load_be32(p + KC_RECORDS_COUNT_OFFSET);
    int32_t last_offset_delta = (int32_t)kc_load_be32(p + KC_LAST_OFFSET_DELTA_OFFSET);
    if (check_count)
        return count >= 1 && last_offset_delta == count - 1;
    return count >= 0 && last_offset_delta >= 0;
}

/* Full check of one batch: size, magic, CRC-32C and record count, in that
 * order. check_crc = 0 skips the CRC (it is checked elsewhere, e.g. by
 * native/verifier.h while the batch is written). */
static inline int kc_batch_validate(const unsigned char *p, size_t avail,
                                         int check_count, int check_crc,
                                         int64_t *size_out)
{
    int64_t size;
    int status = kc_batch_check_size(p, avail, &size);
    if (status != KC_BATCH_OK)
        return status;
    if (p[KC_MAGIC_OFFSET] != KC_CURRENT_MAGIC)
        return KC_BATCH_MAGIC;
    if (check_crc) {
        uint32_t stored = kc_load_be32(p + KC_CRC_OFFSET);
        if (kc_crc32c(0, p + KC_ATTRIBUTES_OFFSET, (size_t)size - KC_ATTRIBUTES_OFFSET) != stored)
            return KC_BATCH_CRC;
    }
    if (!kc_batch_count_ok(p, check_count))
        return KC_BATCH_COUNT;
    *size_out = size;
    return KC_BATCH_OK;
}

static inline int kc_batch_check(const unsigned char *p, size_t avail,
                                 int check_count, int64_t *size_out)
{
    return kc_batch_validate(p, avail, check_count, 1, size_out);
}

#endif /* KCORE_BATCH_H */
