#include "query_text.h"

#include "json.h"

namespace strata_audit {

void redact_literals(std::string_view in, std::string *out) {
  out->clear();
  out->reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    if (c == '`') {
      // Identifier: copy through the closing backquote ("``" is an escaped one).
      size_t j = i + 1;
      while (j < in.size()) {
        if (in[j] == '`') {
          if (j + 1 < in.size() && in[j + 1] == '`') {
            j += 2;
            continue;
          }
          break;
        }
        ++j;
      }
      const size_t end = j < in.size() ? j + 1 : j;
      out->append(in.substr(i, end - i));
      i = end;
      continue;
    }
    if (c != '\'' && c != '"') {
      out->push_back(c);
      ++i;
      continue;
    }
    // String literal: skip to the closing quote.
    size_t j = i + 1;
    while (j < in.size()) {
      if (in[j] == '\\') {
        j += 2;
        continue;
      }
      if (in[j] == c) {
        if (j + 1 < in.size() && in[j + 1] == c) {
          j += 2;
          continue;
        }
        break;
      }
      ++j;
    }
    out->push_back(c);
    out->push_back('?');
    out->push_back(c);
    i = j < in.size() ? j + 1 : in.size();
  }
}

std::string_view truncate_utf8(std::string_view s, size_t max_bytes) {
  if (max_bytes == 0 || s.size() <= max_bytes) return s;
  size_t i = 0;
  while (i < max_bytes) {
    size_t n = utf8_sequence_length(s.substr(i));
    if (n == 0) n = 1;  // a stray byte stands alone
    if (i + n > max_bytes) break;
    i += n;
  }
  return s.substr(0, i);
}

}  // namespace strata_audit
