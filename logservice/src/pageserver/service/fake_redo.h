// FakeRedoHelper: a RedoApplyHelper for a toy redo format, for tests and for
// running pageserverd before the InnoDB helper exists (stage 4). It is NOT
// InnoDB's format; nothing in it is meant to look like it.
//
// Log = groups, each one "mini-transaction":
//   u32 magic kGroupMagic, u32 body_len, u32 crc32c(body), body
//   body = u16 n, n * record
//   record = u8 type, u32 space, u32 page, u32 arg, u32 len, len bytes
//     kWrite   (1): write the bytes at offset `arg` of page (space, page)
//     kCreate  (2): create space `space` with `page` pages; the bytes are its name
//     kExtend  (3): space `space` now has `page` pages
//     kDelete  (4): space `space` is deleted
// A group's records are stamped [group start, group end).
// Page image (page_size bytes): u64 page LSN, u32 space, u32 page, u32
// crc32c of the rest with the CRC field zero, then payload. kWrite needs
// 20 <= arg and arg + len <= page_size. A record applies only when its
// start LSN is at or above the page LSN (as InnoDB's recv_recover_page).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "redo_apply.h"

namespace strata::pageserver {

class FakeRedoHelper final : public RedoApplyHelper {
 public:
  static constexpr std::uint32_t kGroupMagic = 0x4B414647u;  // "GFAK"
  static constexpr std::size_t kGroupHeader = 12;
  static constexpr std::size_t kPageHeader = 20;
  enum Type : std::uint8_t { kWrite = 1, kCreate = 2, kExtend = 3, kDelete = 4 };

  explicit FakeRedoHelper(std::uint32_t page_size = 4096) : page_size_(page_size) {}
  std::uint32_t page_size() const override { return page_size_; }
  Result<ParseResult> Parse(Lsn from, std::string_view bytes) override;
  Result<std::string> Apply(PageId page, const std::optional<std::string>& base,
                            const std::vector<PageRecord>& records) override;
  Result<Lsn> CheckImage(PageId page, std::string_view image) const override;

  // Builders for tests and tools: one record, and a group of records.
  struct Rec {
    Type type = kWrite;
    std::uint32_t space = 0, page = 0, arg = 0;
    std::string bytes;
  };
  static std::string Group(const std::vector<Rec>& recs);
  // An image of `page` at page LSN `lsn` with `payload` after the header.
  std::string MakeImage(PageId page, Lsn lsn, std::string_view payload) const;

 private:
  std::uint32_t page_size_;
};

}  // namespace strata::pageserver
