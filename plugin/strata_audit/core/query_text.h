// What the log keeps of a statement's text: optional redaction of string
// literals and an optional length limit. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace strata_audit {

// Replaces the contents of every quoted string literal ('...' and "...",
// with backslash escapes and doubled quotes) by a single '?': 
//   UPDATE t SET pw='s3cr''et' WHERE id=1  ->  UPDATE t SET pw='?' WHERE id=1
// Backquoted identifiers are kept. An unterminated literal is redacted to the
// end. Comments are not parsed: a quote inside a comment starts a literal,
// which errs on the side of hiding text.
void redact_literals(std::string_view in, std::string *out);

// Returns the longest prefix of s of at most max_bytes bytes that does not
// end inside a UTF-8 sequence (max_bytes == 0: no limit).
std::string_view truncate_utf8(std::string_view s, size_t max_bytes);

}  // namespace strata_audit
