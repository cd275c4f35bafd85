// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI,
// ext4 and most storage formats. Two implementations with identical results:
// a portable slicing-by-8 table version, and one using the SSE4.2 crc32
// instruction, chosen at run time when the CPU has it. Both are tested
// against the RFC 3720 vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::logservice::storage {

// Continues `crc` (the CRC of the bytes before) over [data, data + n).
// Crc32cExtend(0, ...) starts a new checksum.
std::uint32_t Crc32cExtend(std::uint32_t crc, const void* data, std::size_t n);
inline std::uint32_t Crc32c(std::string_view s) { return Crc32cExtend(0, s.data(), s.size()); }

// The two implementations, exposed for tests and the benchmark.
std::uint32_t Crc32cExtendPortable(std::uint32_t crc, const void* data, std::size_t n);
std::uint32_t Crc32cExtendHardware(std::uint32_t crc, const void* data, std::size_t n);  // needs Crc32cHardwareAvailable()
bool Crc32cHardwareAvailable();

}  // namespace strata::logservice::storage
