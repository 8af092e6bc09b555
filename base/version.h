// spec/vectors.md §VEC.2, §VEC.11 — the specification version: one constant
// that the vector files (`specVersion`), the runner and the hash contracts
// (spec/contract.md §CON.1 `specVersion`) all take, so that a version step
// changes this line alone.
#pragma once

namespace engram {

// §VEC.11 The version of the specification this code implements.
inline constexpr const char* kSpecVersion = "0.4.0";

}  // namespace engram
