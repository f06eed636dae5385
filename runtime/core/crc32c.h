/**
 * @file crc32c.h
 * @brief CRC-32C (Castagnoli), the checksum of TFRecord files (TensorBoard's
 *        event files), and the masked form those files store.
 *
 * CRC-32C: reflected polynomial 0x82F63B78, initial value and final xor
 * 0xFFFFFFFF (RFC 3720, iSCSI). Computed in software, a byte at a time from a
 * constant table; no state outside the arguments, so any thread may call it.
 */
#ifndef MANTA_CORE_CRC32C_H
#define MANTA_CORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/**
 * CRC-32C of @p n bytes at @p data, continuing @p crc: pass 0 to start, and
 * the result of the previous call to continue, so that
 * manta_crc32c(manta_crc32c(0, a, na), b, nb) is the CRC of a followed by b.
 * manta_crc32c(0, "123456789", 9) == 0xE3069283.
 * @param data may be NULL when @p n is 0.
 */
uint32_t manta_crc32c(uint32_t crc, const void *data, size_t n);

/**
 * The masked CRC that TFRecord files store: ((crc >> 15) | (crc << 17)) +
 * 0xa282ead8, modulo 2^32 (a CRC over data that holds CRCs is then less
 * likely to be trivial).
 */
uint32_t manta_crc32c_mask(uint32_t crc);

#endif
