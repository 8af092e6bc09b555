// conformance/plugins/abi_shims.h — how the in-tree plug-ins (the reference
// plug-in, the CUDA plug-in, and plugin_inputs.cc which both link) turn C++
// exceptions into the C ABI of conformance/include/engram/conformance.h
// (§CONF.3). No exception may cross the ABI (the host is C), so every entry
// point runs its body through one of these:
//  * Guard: entry points that return a status: the body's status (0), or 1
//    with the exception's message in the caller's err buffer;
//  * GuardHandle: entry points that return a handle: the handle, or nullptr
//    with the message in err;
//  * GuardOr: entry points the ABI gives no error buffer: the body's value,
//    or `fallback`.
// Only std::exception is caught (engram::Error and the standard library's
// exceptions derive from it), as each entry point did before these shims.
#ifndef ENGRAM_CONFORMANCE_PLUGINS_ABI_SHIMS_H_
#define ENGRAM_CONFORMANCE_PLUGINS_ABI_SHIMS_H_

#include <cstddef>
#include <cstring>
#include <exception>

namespace engram::plugin {

// Copies e.what() into the caller's buffer (truncated, always terminated); returns 1.
inline int Refuse(const std::exception& e, char* err, size_t err_len) {
  if (err != nullptr && err_len > 0) {
    std::strncpy(err, e.what(), err_len - 1);
    err[err_len - 1] = '\0';
  }
  return 1;
}

// body() returns the entry point's status; an exception becomes status 1.
template <class Body>
int Guard(char* err, size_t err_len, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

// body() returns a new handle; an exception becomes nullptr.
template <class Body>
auto GuardHandle(char* err, size_t err_len, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    Refuse(e, err, err_len);
    return nullptr;
  }
}

// For entry points without an error buffer: an exception becomes `fallback`.
template <class T, class Body>
T GuardOr(T fallback, Body&& body) {
  try {
    return body();
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace engram::plugin

#endif  // ENGRAM_CONFORMANCE_PLUGINS_ABI_SHIMS_H_
