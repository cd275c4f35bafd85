// CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the one checksum of
// the project. rdma/ frames, the log service's on-disk records, segment
// headers and durable files, and the page server's layer files and page
// images all use it; logservice/ links strata_rdma for it.
//
// Three paths compute the same function, chosen once per process: AVX-512
// VPCLMULQDQ folding for buffers of 256 bytes or more, the SSE4.2 crc32
// instruction otherwise, a slicing-by-8 table on CPUs with neither. Tests
// compare them with each other on random data and with the RFC 3720 vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::rdma {

// Continues a CRC: Crc32c(Crc32c(0, a), b) == Crc32c(0, a||b); 0 starts one.
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);
// The CRC of `bytes` alone.
inline uint32_t Crc32c(std::string_view bytes) { return Crc32c(0, bytes.data(), bytes.size()); }

// For tests and the benchmark: force one implementation. A path the CPU
// lacks falls back to the next slower one (Crc32cPathAvailable says which).
enum class Crc32cPath { kTable, kCrc32Instruction, kFolding };
uint32_t Crc32cImplementation(Crc32cPath path, uint32_t crc, const void* data, size_t size);
bool Crc32cPathAvailable(Crc32cPath path);

}  // namespace strata::rdma
