// What the page server checks of an InnoDB page image without InnoDB's code
// (docs/design/page-server.md, section 5.6): format constants of the file
// page, not of any redo record. Every image the helper returns, the page
// server stores or serves passes through CheckInnoDbPage.
//
//   bytes 0-3     checksum (crc32 algorithm: CRC-32C of bytes 4-25 XOR
//                 CRC-32C of bytes 38 to size-8, big-endian), repeated in
//                 the trailer's first 4 bytes on uncompressed pages
//   bytes 4-7     page number          bytes 16-23  FIL_PAGE_LSN
//   bytes 34-37   space id             last 4 bytes low 32 bits of the LSN
// An all-zero page is a page never written (LSN 0). Compressed pages (a
// physical size below the logical one) have their own checksum, computed by
// InnoDB's zip code; here only their page id is checked.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::pageserver::helper {

// The page LSN of a valid image of `page`, or kCorruption naming what failed.
logservice::Result<logservice::Lsn> CheckInnoDbPage(logservice::PageId page, std::string_view image,
                                                    std::uint32_t logical_page_size);

// The file space header of page 0 (bytes 38 on): FSP_SIZE (+8) and
// FSP_SPACE_FLAGS (+16). nullopt for another page or one never written.
struct InnoDbSpaceHeaderFields {
  std::uint32_t flags = 0;
  std::uint32_t size_pages = 0;
};
std::optional<InnoDbSpaceHeaderFields> InnoDbSpaceHeader(logservice::PageId page, std::string_view image);

// The crc32 checksum InnoDB stores in bytes 0-3 of an uncompressed page.
std::uint32_t InnoDbPageCrc32(std::string_view image);

}  // namespace strata::pageserver::helper
