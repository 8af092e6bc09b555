// libFuzzer target: what an implementation answers (§CONF.1-§CONF.2), as the runner splits tests and
// compares outputs: arbitrary JSON on both sides must give a verdict, never a crash.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "conformance/runner/runner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return 0;
  // The input is a test, optionally with a "group" key (tolerances of §FUS.9 live in groups).
  const nlohmann::ordered_json group =
      doc.contains("group") && doc["group"].is_object() ? doc["group"] : nlohmann::ordered_json::object();
  for (const char* type : {"HashTest", "HashStateTest", "HashHandoffTest", "LayoutTest", "E4M3DecodeTest",
                           "SyntheticLookupTest", "GateFunctionTest", "ShortConvTest", "EngramForwardTest"}) {
    engram::vectors::SplitTest s;
    try {
      s = engram::vectors::SplitOrdered(type, doc);  // vectors are schema-checked; odd shapes may throw
    } catch (const nlohmann::json::exception&) {
      continue;
    }
    // An implementation's answer can be anything: comparing it must never throw.
    engram::vectors::CompareOrdered(type, s.expected, doc);
    engram::vectors::CompareOrdered(type, s.expected, s.inputs);
    engram::vectors::CompareOrdered(type, group, s.expected, doc);
    engram::vectors::CompareOrdered(type, group, s.expected, s.inputs);
  }
  return 0;
}
