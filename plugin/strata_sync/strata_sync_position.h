/* Strata strong sync: positions in the source's binary log.

   Pure logic, no MySQL headers, so the matching rules are unit tested
   (tests/position_test.cc). See docs/design/strong-sync.md, section 3; the
   quorum over positions is strata_sync_ack_ledger.h.

   A position is (file basename, end offset). Acks, ack points and waiters
   all use the end offset of an event in the file the source wrote it to,
   so one transaction has one position whatever path the replica took to
   get it (file/position or GTID auto-position, before or after a rotate). */
#ifndef STRATA_SYNC_POSITION_H
#define STRATA_SYNC_POSITION_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::sync {

/** Orders binary log file names: same stem ("binlog."), then the numeric
    extension by value, so binlog.999999 < binlog.1000000 (a plain string
    compare gets that wrong once the sequence outgrows six digits). Names
    with different stems compare as strings (they never meet in one source's
    log; the order only has to be total). */
inline int compare_log_names(std::string_view a, std::string_view b) {
  // Nearly every comparison is within one file: one memcmp settles it.
  if (a == b) return 0;
  const auto dot_a = a.rfind('.'), dot_b = b.rfind('.');
  if (dot_a != std::string_view::npos && dot_b != std::string_view::npos &&
      a.substr(0, dot_a) == b.substr(0, dot_b)) {
    std::string_view na = a.substr(dot_a + 1), nb = b.substr(dot_b + 1);
    const auto digits = [](std::string_view s) {
      return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return c >= '0' && c <= '9';
      });
    };
    if (digits(na) && digits(nb)) {
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size() ? -1 : 1;
      const int c = na.compare(nb);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
  }
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

/** A position in the source's binary log: (file basename, end offset). */
struct Pos {
  std::string file;
  std::uint64_t pos = 0;
  bool operator<(const Pos &o) const {
    const int c = compare_log_names(file, o.file);
    return c < 0 || (c == 0 && pos < o.pos);
  }
  bool operator<=(const Pos &o) const { return !(o < *this); }
  bool operator==(const Pos &o) const { return !(*this < o) && !(o < *this); }
};

}  // namespace strata::sync

#endif  // STRATA_SYNC_POSITION_H
