// §ERR.6 The nesting depth of untrusted JSON, checked before it is parsed.
#include "base/json_depth.h"

#include <string>

#include "base/error.h"

namespace engram {

void CheckJsonDepth(std::string_view text, std::string_view source, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character (a '"' or '\' among them) is never a delimiter
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > max_depth) {
          throw Error(std::string(source) + ": JSON nested deeper than " + std::to_string(max_depth) + " levels (the " +
                      std::to_string(max_depth + 1) + "th '[' or '{' opens at byte " + std::to_string(i) +
                      "; §ERR.6: no input needs more)");
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // an unbalanced close is the parser's to report
        break;
      default: break;
    }
  }
}

}  // namespace engram
