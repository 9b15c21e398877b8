/*
 * Big-endian loads and stores for Kafka's wire and disk formats (all
 * multi-byte integers in RecordBatch v2 and the index files are big-endian).
 * memcpy + bswap compiles to one mov/movbe; no alignment is assumed.
 */
#ifndef KCORE_KBYTES_H
#define KCORE_KBYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t kc_load_be16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap16(v);
#endif
    return v;
}

static inline uint32_t kc_load_be32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

static inline uint64_t kc_load_be64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void kc_store_be32(unsigned char *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    memcpy(p, &v, 4);
}

static inline void kc_store_be64(unsigned char *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}

#endif /* KCORE_KBYTES_H */
