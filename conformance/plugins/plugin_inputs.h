// conformance/plugins/plugin_inputs.h — what every in-tree plug-in builds
// with the reference because it is an *input* of the implementation under
// test, not its output: the layout of a configuration (§LAY; multipliers,
// primes and offsets feed the hasher) and the row bytes of a table (§STO.4,
// §STO.5; decoding them is the implementation's work). Both the reference
// plug-in and the CUDA plug-in link plugin_inputs.cc, which defines the
// engram_layout_* and engram_table_{synthetic,open_*,destroy} entry points of
// conformance/include/engram/conformance.h (§CONF.3) once.
#ifndef ENGRAM_CONFORMANCE_PLUGINS_PLUGIN_INPUTS_H_
#define ENGRAM_CONFORMANCE_PLUGINS_PLUGIN_INPUTS_H_

#include <cstddef>
#include <exception>
#include <memory>
#include <string>

#include "engram/conformance.h"
#include "reference/config.h"
#include "reference/layout.h"
#include "reference/storage.h"

struct engram_layout {
  engram::Layout layout;
  engram::EngramConfig config;  // the forward entry points need hidden size, streams, eps, head_dim
  std::string fingerprint;      // §LAY.5, checked by engram_hasher_import
};

struct engram_table {
  std::unique_ptr<engram::RowSource> source;
};

namespace engram::plugin {

// The C ABI promises messages that name the field: checked before the data is
// used (the callee's own checks name its internal names). Throw engram::Error.
void CheckLen(size_t got, size_t want, const char* field);
void CheckCapacity(size_t capacity, size_t need, const char* field);

}  // namespace engram::plugin

#endif  // ENGRAM_CONFORMANCE_PLUGINS_PLUGIN_INPUTS_H_
