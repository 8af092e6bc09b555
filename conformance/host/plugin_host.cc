// The plug-in host (plugin_host.h): the JSON-lines protocol (§CONF.2) for a
// shared library that implements the C ABI (§CONF.3). Requests are checked
// here and dispatched by test type to the mappings of outputs_*.cc.
#include "conformance/host/plugin_host.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "base/error.h"
#include "conformance/host/handles.h"
#include "conformance/host/marshal.h"
#include "conformance/host/outputs.h"
#include "conformance/runner/watched_json.h"
#include "engram/conformance.h"
#include "reference/input_files.h"
#include "vectors/accumulate.h"

namespace engram::host {
namespace {

// §CONF.3 Which mapping answers a test type: one entry per type of the vectors.
using Outputs = json (*)(const Api&, const std::string&, const json&, const json&);
template <json (*F)(const Api&, const json&, const json&)>
json Typeless(const Api& api, const std::string&, const json& group, const json& test) {
  return F(api, group, test);
}
const std::map<std::string, Outputs>& OutputsByType() {
  static const std::map<std::string, Outputs> table = {
      {"BoundedIntegersTest", &Typeless<BoundedIntegersOutputs>},
      {"MultipliersTest", &Typeless<MultipliersOutputs>},
      {"LayoutTest", &Typeless<LayoutOutputs>},
      {"HashTest", &Typeless<HashOutputs>},
      {"HashStateTest", &Typeless<HashStateOutputs>},
      {"HashHandoffTest", &Typeless<HashHandoffOutputs>},
      {"E4M3DecodeTest", &StorageOutputs},
      {"E8M0DecodeTest", &StorageOutputs},
      {"ElementDecodeTest", &StorageOutputs},
      {"SyntheticLookupTest", &StorageOutputs},
      {"SafetensorsLookupTest", &StorageOutputs},
      {"PackedLookupTest", &StorageOutputs},
      {"FloatLookupTest", &StorageOutputs},
      {"RowShardTest", &StorageOutputs},
      {"HeadShardTest", &StorageOutputs},
      {"PackedBatchTest", &ServingOutputs},
      {"DraftTreeTest", &ServingOutputs},
      {"TokenMapTest", &Typeless<TokenMapOutputs>},
      {"TokenLookupTest", &Typeless<TokenLookupOutputs>},
      {"GateFunctionTest", &FusionOutputs},
      {"V41GateTest", &FusionOutputs},
      {"WkvTest", &FusionOutputs},
      {"DemoGateTest", &FusionOutputs},
      {"ShortConvTest", &FusionOutputs},
      {"ShortConvStateTest", &FusionOutputs},
      {"EngramForwardTest", &FusionOutputs},
  };
  return table;
}

json RunTest(const Api& api, const std::string& type, const json& group, const json& test) {
  const auto it = OutputsByType().find(type);
  if (it == OutputsByType().end()) {
    throw Unsupported{"test type " + type + " (this plug-in host does not map it to the C ABI)"};
  }
  return it->second(api, type, group, test);
}

// §CONF.2 The shape of a request, checked before anything is read from it:
// an empty string when it is well formed, else what is wrong.
std::string RequestProblem(const json& request) {
  if (!request.is_object()) return std::string("the request is a JSON ") + request.type_name() + ", not an object";
  if (!request.contains("op") || !request["op"].is_string()) return "key 'op': missing or not a string";
  const std::string op = request["op"];
  auto need = [&](const char* key, bool (json::*is)() const noexcept, const char* type) -> std::string {
    if (!request.contains(key) || !(request[key].*is)()) return "op " + op + ": key '" + key + "': missing or not " + type;
    return "";
  };
  std::string p;
  if (op == "test") {
    if (!(p = need("type", &json::is_string, "a string")).empty()) return p;
    if (!(p = need("group", &json::is_object, "an object")).empty()) return p;
    if (!(p = need("test", &json::is_object, "an object")).empty()) return p;
  }
  if (op == "accumulate") {
    if (!(p = need("group", &json::is_object, "an object")).empty()) return p;
    if (!(p = need("n", &json::is_number_integer, "an integer")).empty()) return p;
    if (!(p = need("seed", &json::is_number_integer, "an integer")).empty()) return p;
  }
  return "";
}

// §CONF.3 engram_conformance_info() as the §CONF.2 hello answer. A library
// that cannot be served (another ABI version, no info, strings that are not
// UTF-8 or lists with empty names) is answered with `error`, which ends the
// run before any test (exit 2): its claims cannot be trusted.
json HelloAnswer(const Api& api) {
  const engram_conformance_info_t* info = api.info();
  auto refuse = [](const std::string& why) {
    return json{{"protocol", 1}, {"name", "?"}, {"suites", json::array()}, {"profiles", json::array()},
                {"error", "engram_conformance_info(): " + why}};
  };
  if (info == nullptr) return refuse("returned NULL");
  if (info->abi_version != ENGRAM_CONFORMANCE_ABI_VERSION) {
    return refuse("ABI version " + std::to_string(info->abi_version) + " is not " +
                  std::to_string(ENGRAM_CONFORMANCE_ABI_VERSION) + " (this host speaks engram/conformance.h version " +
                  std::to_string(ENGRAM_CONFORMANCE_ABI_VERSION) + ")");
  }
  // Each string must be UTF-8: it is passed on as JSON text.
  std::string problem;
  auto text = [&](const char* field, const char* s, bool required) {
    if (s == nullptr || *s == '\0') {
      if (required && problem.empty()) problem = std::string(field) + " is empty";
      return std::string();
    }
    try {
      (void)json(std::string(s)).dump();  // strict: throws on a byte sequence that is not UTF-8
    } catch (const json::exception&) {
      if (problem.empty()) problem = std::string(field) + " is not valid UTF-8: " + json(std::string(s)).dump(-1, ' ', true, json::error_handler_t::replace);
    }
    return std::string(s);
  };
  auto list = [&](const char* field, const char* s) {
    json out = json::array();
    const std::string all = text(field, s, true);
    size_t at = 0;
    while (problem.empty() && at <= all.size()) {
      const size_t comma = std::min(all.find(',', at), all.size());
      const std::string item = all.substr(at, comma - at);
      if (item.empty() || item.find_first_of(" \t") != std::string::npos) {
        problem = std::string(field) + " \"" + all + "\" is not a comma-separated list of names";
      }
      out.push_back(item);
      at = comma + 1;
    }
    return out;
  };
  json hello = {{"protocol", 1},
                {"name", text("name", info->name, true)},
                {"version", text("version", info->version, false)},
                {"suites", list("suites", info->suites)},
                {"profiles", list("profiles", info->profiles)},
                {"features", json::array({"c-abi"})}};
  if (!problem.empty()) {
    // The name often says why a library claims nothing (e.g. a GPU plug-in on a machine without one).
    // (Bytes that are not UTF-8 are replaced when the answer is written.)
    return refuse(problem + " (the library's name: \"" + std::string(info->name ? info->name : "?") + "\")");
  }
  return hello;
}

}  // namespace

json Answer(const Api& api, const json& request) {
  if (const std::string problem = RequestProblem(request); !problem.empty()) {
    return {{"refused", "plugin-host: " + problem}};
  }
  const std::string op = request["op"];
  try {
    if (op == "hello") return HelloAnswer(api);
    if (op == "contract") {
      if (api.contract_json != nullptr) {
        std::vector<char> out(1 << 22);
        char err[1024] = "";
        if (api.contract_json(out.data(), out.size(), err, sizeof(err)) == 0) {
          out.back() = '\0';  // a library that filled the whole buffer still ends here
          try {
            return {{"contract", ParseJson(out.data(), "engram_contract_json")}};  // §ERR.5 strict
          } catch (const Error& e) {
            return {{"refused", std::string("engram_contract_json wrote something that is not JSON: ") + e.what()}};
          }
        }
      }
      Layout layout(api, request);
      return {{"contract", nullptr}, {"layers", layout.LayersJson()}};
    }
    if (op == "test") {
      return {{"outputs", RunTest(api, request.at("type").get<std::string>(), request.at("group"), request.at("test"))}};
    }
    if (op == "accumulate") {
      if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
      const json& group = request.at("group");
      Layout layout(api, group);
      Hasher h(api, layout, size_t{0});
      std::vector<int64_t> rows;
      const std::string digest = vectors::AccumulateHash(
          group.at("profile").get<std::string>() == "v4.1", I64(group.at("compressedVocabSize")),
          U64(request.at("seed")), I64(request.at("n")),
          [&](const std::vector<int64_t>& ids, std::vector<int64_t>& out) { h.AppendFlat(ids, out); });
      return {{"sha256", digest}};
    }
    if (op == "bye") return {{"bye", true}};
    return {{"unsupported", "op " + op}};
  } catch (const Refused& r) {
    return {{"refused", r.message}};
  } catch (const Unsupported& u) {
    return {{"unsupported", u.what}};
  } catch (const std::exception& e) {
    // Malformed requests are the runner's bug, but must not kill the host.
    return {{"refused", std::string("plugin-host: ") + e.what()}};
  }
}

void Serve(const std::string& lib_path) {
  // §CONF.3 The protocol keeps descriptors of its own: a library that
  // prints to stdout (or reads stdin) must not corrupt the JSON-lines
  // stream. Before the library is loaded (its constructors may print), the
  // protocol's ends are moved to new descriptors, stdout becomes stderr and
  // stdin /dev/null.
  const int protocol_in = ::dup(0), protocol_out = ::dup(1);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (protocol_in < 0 || protocol_out < 0 || null_fd < 0 || ::dup2(2, 1) < 0 || ::dup2(null_fd, 0) < 0) {
    throw Error(std::string("plugin-host: cannot set up the protocol descriptors: ") + std::strerror(errno));
  }
  ::close(null_fd);
  ::fcntl(protocol_in, F_SETFD, FD_CLOEXEC);
  ::fcntl(protocol_out, F_SETFD, FD_CLOEXEC);
  FILE* in = ::fdopen(protocol_in, "r");
  FILE* out = ::fdopen(protocol_out, "w");
  if (in == nullptr || out == nullptr) throw Error(std::string("plugin-host: fdopen: ") + std::strerror(errno));
  const Api api = LoadApi(lib_path);
  char* buf = nullptr;
  size_t cap = 0;
  ssize_t n;
  while ((n = ::getline(&buf, &cap, in)) >= 0) {
    std::string line(buf, static_cast<size_t>(n));
    if (!line.empty() && line.back() == '\n') line.pop_back();
    json request;
    json reply;
    try {
      // §ERR.5 strict, like every input: the one-pass parse, and the strict
      // one (which words the refusal) when that one is in doubt.
      bool parsed = false;
      try {
        parsed = conform::ParseWatched(line, request);
      } catch (const nlohmann::json::exception&) {
      }
      if (!parsed) request = ParseJson(line, "the request");
    } catch (const Error& e) {
      reply = {{"refused", std::string("plugin-host: the request is not JSON (or repeats a key): ") + e.what()}};
    }
    if (reply.is_null()) reply = Answer(api, request);
    // A library may hand back bytes that are not UTF-8: replaced, never fatal to the host.
    const std::string text = reply.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) break;
    if (request.is_object() && request.contains("op") && request["op"] == "bye") break;
  }
  std::free(buf);
  std::fclose(in);
  std::fclose(out);
}

}  // namespace engram::host
