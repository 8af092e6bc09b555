// The C-ABI plug-in host (§CONF.3): serves the JSON-lines protocol (§CONF.2)
// for a shared library that implements engram/conformance.h. `engram
// plugin-host --lib PATH` (conformance/cli/cmd_plugin_host.cc) runs it; the
// runner starts that as a child process, so a crash in the library is a
// reported failure, not the runner's.
//
// The pieces: plugin_api.h binds the library's entry points, marshal.h turns
// the protocol's JSON into the ABI's types and back, handles.h and
// sparse_file.h hold what the library is handed, and outputs.h maps the ABI
// 1.1 suites' tests; plugin_host.cc answers each request.
#ifndef ENGRAM_CONFORMANCE_HOST_PLUGIN_HOST_H_
#define ENGRAM_CONFORMANCE_HOST_PLUGIN_HOST_H_

#include <string>

#include <nlohmann/json.hpp>

#include "conformance/host/plugin_api.h"

namespace engram::host {

// §CONF.2 The answer to one request (hello, contract, test, accumulate, bye)
// for the library `api`. Never throws: a malformed request, a refusal by the
// library and a missing entry point are answers ({"refused": ...},
// {"unsupported": ...}).
nlohmann::json Answer(const Api& api, const nlohmann::json& request);

// §CONF.3 Loads the library at `lib_path` and answers the requests read from
// stdin, one JSON line each, on stdout until "bye" or the end of the input.
// The protocol keeps descriptors of its own (the library's stdout goes to
// stderr). engram::Error when the descriptors cannot be set up or the library
// cannot be loaded (plugin_api.h).
void Serve(const std::string& lib_path);

}  // namespace engram::host

#endif  // ENGRAM_CONFORMANCE_HOST_PLUGIN_HOST_H_
