// Error type shared by every part of the reference.
//
// Contract: anything the reference refuses (a bad configuration key, an id out
// of range, a malformed file) is reported by throwing engram::Error whose
// message names *where* (file, key or field) and *what* (the offending value).
// Command-line front ends catch it, print it on stderr and exit non-zero.
#ifndef ENGRAM_REFERENCE_ERROR_H_
#define ENGRAM_REFERENCE_ERROR_H_

#include <stdexcept>
#include <string>

namespace engram {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace engram

#endif  // ENGRAM_REFERENCE_ERROR_H_
