// JSON string escaping for audit records.
//
// Contract: append_json_string() appends a complete JSON string literal
// (with the surrounding quotes) for ANY byte sequence, so a record line always
// parses, whatever a client sent. Valid UTF-8 is copied as is (except '"',
// '\\' and control characters, which are escaped). A byte that is not part of
// a well-formed UTF-8 sequence (overlong forms, surrogates and code points
// above U+10FFFF included) is written as \u00XX, i.e. read as Latin-1: the
// line stays valid JSON and every input byte stays visible. Thread-safe
// (pure function).
#pragma once

#include <string>
#include <string_view>

#include "text_out.h"

namespace strata_audit {

void append_json_string(std::string *out, std::string_view bytes);
void append_json_string(TextOut &out, std::string_view bytes);
// The same escaping without the surrounding quotes: for a string value
// written in pieces.
void append_json_chars(TextOut &out, std::string_view bytes);

// Length of the well-formed UTF-8 sequence starting at s[0] (1..4), or 0 if
// s[0] does not start one. Exposed for truncation at character boundaries.
size_t utf8_sequence_length(std::string_view s);

}  // namespace strata_audit
