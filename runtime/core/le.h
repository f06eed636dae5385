/**
 * @file le.h
 * @brief Little-endian loads and stores for host code (file formats, wire
 *        formats): the byte order is fixed whatever the host's, and the
 *        pointers need no alignment.
 *
 * The inference engine (runtime/engine) keeps its own copies: it depends on
 * nothing outside its folder.
 */
#ifndef MANTA_CORE_LE_H
#define MANTA_CORE_LE_H

#include <stddef.h>
#include <stdint.h>

/** Store the low @p n bytes (1 to 8) of @p v at @p p, least significant first. */
static inline void manta_le_put(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/** Load @p n bytes (1 to 8) stored least significant first at @p p. */
static inline uint64_t manta_le_get(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i > 0; i--)
        v = v << 8 | p[i - 1];
    return v;
}

/** Store @p v little-endian at @p p (2 bytes). */
static inline void manta_le_put16(unsigned char *p, uint16_t v) { manta_le_put(p, v, 2); }
/** Store @p v little-endian at @p p (4 bytes). */
static inline void manta_le_put32(unsigned char *p, uint32_t v) { manta_le_put(p, v, 4); }
/** Store @p v little-endian at @p p (8 bytes). */
static inline void manta_le_put64(unsigned char *p, uint64_t v) { manta_le_put(p, v, 8); }

/** Load a little-endian 2-byte value from @p p. */
static inline uint16_t manta_le_get16(const unsigned char *p)
{
    return (uint16_t)manta_le_get(p, 2);
}
/** Load a little-endian 4-byte value from @p p. */
static inline uint32_t manta_le_get32(const unsigned char *p)
{
    return (uint32_t)manta_le_get(p, 4);
}
/** Load a little-endian 8-byte value from @p p. */
static inline uint64_t manta_le_get64(const unsigned char *p) { return manta_le_get(p, 8); }

#endif
