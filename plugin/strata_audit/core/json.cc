#include "json.h"

#include <algorithm>
#include <cstring>

namespace strata_audit {

namespace {

constexpr char kHex[] = "0123456789abcdef";

char *put_u00(char *p, unsigned char c) {
  std::memcpy(p, "\\u00", 4);
  p[4] = kHex[c >> 4];
  p[5] = kHex[c & 0xf];
  return p + 6;
}

// Input is escaped in chunks of this many bytes, each with room reserved
// for its worst case (6 output bytes per input byte): one capacity check
// per chunk, and a huge statement never reserves six times its size.
constexpr size_t kChunk = 1024;

// Bytes copied as they are: printable ASCII except '"' and '\\'.
struct PlainBytes {
  bool plain[256] = {};
  constexpr PlainBytes() {
    for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  }
};
constexpr PlainBytes kPlain;

}  // namespace

size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // no overlong forms
    if (c == 0xed) hi = 0x9f;  // no UTF-16 surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;  // no overlong forms
    if (c == 0xf4) hi = 0x8f;  // nothing above U+10FFFF
  } else {
    return 0;  // continuation byte, 0xc0, 0xc1, 0xf5..0xff
  }
  if (s.size() < n) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (b(i) < 0x80 || b(i) > 0xbf) return 0;
  }
  return n;
}

void append_json_chars(TextOut &out, std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // A UTF-8 sequence that starts in a chunk is taken whole: up to 3
    // bytes past the chunk's end, for which room is reserved too.
    const size_t chunk_end = std::min(s.size(), i + kChunk);
    char *const start = out.reserve(6 * (chunk_end - i + 3));
    char *p = start;
    while (i < chunk_end) {
      // The common case: a run of plain bytes, copied at once.
      size_t j = i;
      while (j < chunk_end && kPlain.plain[static_cast<unsigned char>(s[j])]) ++j;
      if (j > i) {
        std::memcpy(p, s.data() + i, j - i);
        p += j - i;
        i = j;
        if (i == chunk_end) break;
      }
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c < 0x80) {  // '"' or '\\'
        *p++ = '\\';
        *p++ = static_cast<char>(c);
        ++i;
        continue;
      }
      if (c < 0x20) {
        *p++ = '\\';
        switch (c) {
          case '\n': *p++ = 'n'; break;
          case '\r': *p++ = 'r'; break;
          case '\t': *p++ = 't'; break;
          case '\b': *p++ = 'b'; break;
          case '\f': *p++ = 'f'; break;
          default: p = put_u00(p - 1, c);
        }
        ++i;
        continue;
      }
      const size_t n = utf8_sequence_length(s.substr(i));
      if (n == 0) {
        p = put_u00(p, c);  // stray byte: Latin-1 reading
        ++i;
      } else {
        std::memcpy(p, s.data() + i, n);
        p += n;
        i += n;
      }
    }
    out.commit(static_cast<size_t>(p - start));
  }
}

void append_json_string(TextOut &out, std::string_view s) {
  out.put('"');
  append_json_chars(out, s);
  out.put('"');
}

void append_json_string(std::string *out, std::string_view s) {
  TextOut o(out);
  append_json_string(o, s);
}

}  // namespace strata_audit
