/// \file
/// Error type shared by every part of the reference.
///
/// Contract: anything the reference refuses (a bad configuration key, an id out
/// of range, a malformed file) is reported by throwing engram::Error whose
/// message names *where* (file, key or field) and *what* (the offending value).
/// Command-line front ends catch it, print it on stderr and exit non-zero.
#ifndef ENGRAM_BASE_ERROR_H_
#define ENGRAM_BASE_ERROR_H_

#include <stdexcept>
#include <string>

/// Everything of the reference lives here: the spec's algorithms as plain
/// functions and small structs, one header per spec section (spec/README.md).
namespace engram {

/// The one exception type of the reference (§GEN.4 refusal): its message names
/// where (file, key, field, position) and what (the offending value).
class Error : public std::runtime_error {
 public:
  /// §GEN.4 `what` is the complete message, e.g. "example.json: key 'layer_ids': layer id 1 appears twice".
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace engram

#endif  // ENGRAM_BASE_ERROR_H_
