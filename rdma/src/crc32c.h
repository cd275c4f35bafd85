// CRC32C (Castagnoli), the frame checksum. Uses AVX-512 VPCLMULQDQ folding
// for buffers of 256 bytes or more, the SSE4.2 crc32 instruction otherwise,
// a table on CPUs with neither (chosen once per process). All three compute
// the same function; tests compare them on random data.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::rdma {

// Continues a CRC: Crc32c(Crc32c(0, a), b) == Crc32c(0, a||b).
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);

// For tests and the benchmark: force one implementation. A path the CPU
// lacks falls back to the next slower one (Crc32cPathAvailable says which).
enum class Crc32cPath { kTable, kCrc32Instruction, kFolding };
uint32_t Crc32cImplementation(Crc32cPath path, uint32_t crc, const void* data, size_t size);
bool Crc32cPathAvailable(Crc32cPath path);

}  // namespace strata::rdma
