// CRC32C (Castagnoli), the frame checksum. Uses the SSE4.2 crc32 instruction
// when the CPU has it (chosen once at first use), a table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::rdma {

// Continues a CRC: Crc32c(Crc32c(0, a), b) == Crc32c(0, a||b).
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);

}  // namespace strata::rdma
