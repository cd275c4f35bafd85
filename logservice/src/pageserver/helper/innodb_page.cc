// CheckInnoDbPage: see innodb_page.h.
#include "innodb_page.h"

#include <string>

#include "strata/rdma/crc32c.h"

namespace strata::pageserver::helper {
namespace {

using logservice::Lsn;
using logservice::Status;
using rdma::Crc32c;

constexpr std::size_t kPageOffset = 4, kFlushLsn = 26, kPageLsn = 16, kSpaceId = 34, kPageData = 38, kTrailer = 8;

std::uint64_t LoadBe(std::string_view s, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

std::string Name(logservice::PageId p) { return "page " + std::to_string(p.space_id) + ":" + std::to_string(p.page_no); }

}  // namespace

std::optional<InnoDbSpaceHeaderFields> InnoDbSpaceHeader(logservice::PageId page, std::string_view image) {
  constexpr std::size_t kFspSize = kPageData + 8, kFspFlags = kPageData + 16;
  if (page.page_no != 0 || image.size() < kFspFlags + 4 || image.find_first_not_of('\0') == std::string_view::npos)
    return std::nullopt;
  return InnoDbSpaceHeaderFields{static_cast<std::uint32_t>(LoadBe(image, kFspFlags, 4)),
                                 static_cast<std::uint32_t>(LoadBe(image, kFspSize, 4))};
}

std::uint32_t InnoDbPageCrc32(std::string_view image) {
  return Crc32c(image.substr(kPageOffset, kFlushLsn - kPageOffset)) ^
         Crc32c(image.substr(kPageData, image.size() - kPageData - kTrailer));
}

logservice::Result<Lsn> CheckInnoDbPage(logservice::PageId page, std::string_view image,
                                        std::uint32_t logical_page_size) {
  if (image.size() < 1024 || image.size() > logical_page_size || (image.size() & (image.size() - 1)) != 0)
    return Status::Corruption(Name(page) + ": an image of " + std::to_string(image.size()) + " bytes");
  if (image.find_first_not_of('\0') == std::string_view::npos) return Lsn{0};
  if (LoadBe(image, kPageOffset, 4) != page.page_no || LoadBe(image, kSpaceId, 4) != page.space_id)
    return Status::Corruption(Name(page) + ": the image is of page " + std::to_string(LoadBe(image, kSpaceId, 4)) + ":" +
                              std::to_string(LoadBe(image, kPageOffset, 4)));
  const Lsn lsn = LoadBe(image, kPageLsn, 8);
  if (image.size() == logical_page_size) {
    const std::uint32_t stored = static_cast<std::uint32_t>(LoadBe(image, 0, 4));
    if (stored != InnoDbPageCrc32(image))
      return Status::Corruption(Name(page) + ": checksum mismatch (not a crc32 page, or damaged)");
    if (LoadBe(image, image.size() - 4, 4) != (lsn & 0xFFFFFFFFu))
      return Status::Corruption(Name(page) + ": the trailer's LSN differs from the header's (a torn page)");
  }
  return lsn;
}

}  // namespace strata::pageserver::helper
