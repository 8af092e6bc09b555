/// \file
/// §ERR.6 The nesting depth of untrusted JSON, checked before it is parsed.
///
/// A DOM built from `[[[[...]]]]` a million deep is a million nested values,
/// and much of what follows a parse walks values recursively (copy, compare,
/// dump, the checks of each loader): one stack frame per level ends in SIGSEGV
/// well before a 2 MB input is exhausted. nlohmann's parser callback sees the
/// depth but cannot stop the parse without discarding the value, so the
/// check is a separate pass over the bytes, linear and allocation-free, that
/// every JSON parse site runs first (reference/input_files.cc, token_map.cc).
#ifndef ENGRAM_BASE_JSON_DEPTH_H_
#define ENGRAM_BASE_JSON_DEPTH_H_

#include <cstddef>
#include <string_view>

namespace engram {

/// §ERR.6 The deepest nesting any input may have: no file of the project needs
/// more than about 10 levels (a vector test's per-step rows are 6 deep).
inline constexpr size_t kMaxJsonDepth = 256;

/// §ERR.6 Throws engram::Error "<source>: JSON nested deeper than 256 levels
/// (the 257th '[' or '{' opens at byte N; §ERR.6)" when `text` opens more than
/// `max_depth` arrays and objects inside one another. Brackets inside strings
/// (escapes included) do not count; malformed JSON is left to the parser.
void CheckJsonDepth(std::string_view text, std::string_view source, size_t max_depth = kMaxJsonDepth);

}  // namespace engram

#endif  // ENGRAM_BASE_JSON_DEPTH_H_
