// `engram plugin-host --lib PATH`: serves the JSON-lines protocol (§CONF.2)
// for a shared library that implements the C ABI (§CONF.3). The runner starts
// it as a child process, so a crash in the library is a reported failure.
#include <dlfcn.h>

#include <iostream>
#include <map>
#include <memory>

#include "conformance/cli/common.h"
#include "conformance/runner/accumulate.h"
#include "engram/conformance.h"
#include "reference/error.h"

namespace engram::cli {
namespace {

using json = nlohmann::json;

// The library's entry points; a null pointer means "not implemented".
struct Api {
  decltype(&engram_conformance_info) info = nullptr;
  decltype(&engram_bounded_integers) bounded_integers = nullptr;
  decltype(&engram_multipliers) multipliers = nullptr;
  decltype(&engram_layout_create) layout_create = nullptr;
  decltype(&engram_layout_destroy) layout_destroy = nullptr;
  decltype(&engram_layout_layer_count) layout_layer_count = nullptr;
  decltype(&engram_layout_max_ngram) layout_max_ngram = nullptr;
  decltype(&engram_layout_columns) layout_columns = nullptr;
  decltype(&engram_layout_layer) layout_layer = nullptr;
  decltype(&engram_layout_fingerprint) layout_fingerprint = nullptr;
  decltype(&engram_hasher_create) hasher_create = nullptr;
  decltype(&engram_hasher_fork) hasher_fork = nullptr;
  decltype(&engram_hasher_destroy) hasher_destroy = nullptr;
  decltype(&engram_hasher_append) hasher_append = nullptr;
  decltype(&engram_hasher_rollback) hasher_rollback = nullptr;
  decltype(&engram_hasher_position) hasher_position = nullptr;
  decltype(&engram_hasher_history) hasher_history = nullptr;
  decltype(&engram_hasher_import) hasher_import = nullptr;
  decltype(&engram_decode_element) decode_element = nullptr;
  decltype(&engram_contract_json) contract_json = nullptr;

  bool HasLayout() const {
    return layout_create && layout_destroy && layout_layer_count && layout_max_ngram && layout_columns && layout_layer;
  }
  bool HasHasher() const {
    return HasLayout() && hasher_create && hasher_destroy && hasher_append && hasher_position && hasher_history;
  }
};

template <typename F>
void Bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

Api LoadApi(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) throw Error(path + ": cannot load: " + dlerror());
  Api a;
  Bind(lib, "engram_conformance_info", a.info);
  if (a.info == nullptr) throw Error(path + ": does not export engram_conformance_info (required, see engram/conformance.h)");
  Bind(lib, "engram_bounded_integers", a.bounded_integers);
  Bind(lib, "engram_multipliers", a.multipliers);
  Bind(lib, "engram_layout_create", a.layout_create);
  Bind(lib, "engram_layout_destroy", a.layout_destroy);
  Bind(lib, "engram_layout_layer_count", a.layout_layer_count);
  Bind(lib, "engram_layout_max_ngram", a.layout_max_ngram);
  Bind(lib, "engram_layout_columns", a.layout_columns);
  Bind(lib, "engram_layout_layer", a.layout_layer);
  Bind(lib, "engram_layout_fingerprint", a.layout_fingerprint);
  Bind(lib, "engram_hasher_create", a.hasher_create);
  Bind(lib, "engram_hasher_fork", a.hasher_fork);
  Bind(lib, "engram_hasher_destroy", a.hasher_destroy);
  Bind(lib, "engram_hasher_append", a.hasher_append);
  Bind(lib, "engram_hasher_rollback", a.hasher_rollback);
  Bind(lib, "engram_hasher_position", a.hasher_position);
  Bind(lib, "engram_hasher_history", a.hasher_history);
  Bind(lib, "engram_hasher_import", a.hasher_import);
  Bind(lib, "engram_decode_element", a.decode_element);
  Bind(lib, "engram_contract_json", a.contract_json);
  return a;
}

// A refusal by the library, carried to the protocol as {"refused": ...}.
struct Refused {
  std::string message;
};
// An operation the library does not export, carried as {"unsupported": ...}.
struct Unsupported {
  std::string what;
};

class Layout {
 public:
  Layout(const Api& api, const json& group) : api_(api) {
    if (!api.HasLayout()) throw Unsupported{"engram_layout_* entry points"};
    char err[1024] = "";
    const std::string profile = group.value("profile", "");
    handle_ = api.layout_create(group.at("config").dump().c_str(), profile.empty() ? nullptr : profile.c_str(),
                                group.at("compressedVocabSize").get<int64_t>(), group.at("compressedPad").get<int64_t>(),
                                err, sizeof(err));
    if (handle_ == nullptr) throw Refused{err};
  }
  ~Layout() { api_.layout_destroy(handle_); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;

  engram_layout* get() const { return handle_; }
  size_t layers() const { return static_cast<size_t>(api_.layout_layer_count(handle_)); }
  size_t columns() const { return static_cast<size_t>(api_.layout_columns(handle_)); }
  size_t max_ngram() const { return static_cast<size_t>(api_.layout_max_ngram(handle_)); }
  std::string fingerprint() const {
    if (api_.layout_fingerprint == nullptr) return "";
    char out[65] = "";
    api_.layout_fingerprint(handle_, out);
    return out;
  }

  // §VEC.6 the layers as the vectors write them.
  json LayersJson() const {
    json out = json::array();
    for (size_t i = 0; i < layers(); ++i) {
      int64_t id = 0, rows = 0;
      std::vector<int64_t> m(max_ngram()), p(columns()), o(columns());
      if (api_.layout_layer(handle_, static_cast<int32_t>(i), &id, m.data(), p.data(), o.data(), &rows) != 0) {
        throw Refused{"engram_layout_layer refused index " + std::to_string(i)};
      }
      const size_t heads = columns() / (max_ngram() - 1);
      json primes = json::array();
      for (size_t order = 0; order + 1 < max_ngram(); ++order) {
        primes.push_back(std::vector<int64_t>(p.begin() + static_cast<std::ptrdiff_t>(order * heads),
                                              p.begin() + static_cast<std::ptrdiff_t>((order + 1) * heads)));
      }
      out.push_back({{"layerId", id}, {"multipliers", m}, {"primes", primes}, {"offsets", o}, {"numEmbeddings", rows}});
    }
    return out;
  }

 private:
  const Api& api_;
  engram_layout* handle_ = nullptr;
};

class Hasher {
 public:
  Hasher(const Api& api, const Layout& layout, size_t capacity) : api_(api), layout_(layout) {
    char err[1024] = "";
    handle_ = api.hasher_create(layout.get(), capacity, err, sizeof(err));
    if (handle_ == nullptr) throw Refused{err};
  }
  Hasher(const Api& api, const Layout& layout, engram_hasher* handle) : api_(api), layout_(layout), handle_(handle) {}
  ~Hasher() { api_.hasher_destroy(handle_); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  std::unique_ptr<Hasher> Fork() const {
    if (api_.hasher_fork == nullptr) throw Unsupported{"engram_hasher_fork"};
    return std::make_unique<Hasher>(api_, layout_, api_.hasher_fork(handle_));
  }
  // Rows nested [pos][layer][col].
  json Append(const std::vector<int64_t>& ids) {
    const size_t layers = layout_.layers(), cols = layout_.columns();
    std::vector<int64_t> rows(ids.size() * layers * cols);
    char err[1024] = "";
    if (api_.hasher_append(handle_, ids.data(), ids.size(), rows.data(), err, sizeof(err)) != 0) throw Refused{err};
    json out = json::array();
    for (size_t t = 0; t < ids.size(); ++t) {
      json per_layer = json::array();
      for (size_t l = 0; l < layers; ++l) {
        const auto begin = rows.begin() + static_cast<std::ptrdiff_t>((t * layers + l) * cols);
        per_layer.push_back(std::vector<int64_t>(begin, begin + static_cast<std::ptrdiff_t>(cols)));
      }
      out.push_back(per_layer);
    }
    return out;
  }
  void AppendFlat(const std::vector<int64_t>& ids, std::vector<int64_t>& rows) {
    rows.resize(ids.size() * layout_.layers() * layout_.columns());
    char err[1024] = "";
    if (api_.hasher_append(handle_, ids.data(), ids.size(), rows.data(), err, sizeof(err)) != 0) throw Refused{err};
  }
  void Rollback(size_t k) {
    if (api_.hasher_rollback == nullptr) throw Unsupported{"engram_hasher_rollback"};
    char err[1024] = "";
    if (api_.hasher_rollback(handle_, k, err, sizeof(err)) != 0) throw Refused{err};
  }
  void Import(const json& history, const std::string& fingerprint) {
    if (api_.hasher_import == nullptr) throw Unsupported{"engram_hasher_import"};
    const std::vector<int64_t> ids = history.at("history").get<std::vector<int64_t>>();
    char err[1024] = "";
    if (api_.hasher_import(handle_, history.at("position").get<int64_t>(), ids.data(), ids.size(), fingerprint.c_str(), err,
                           sizeof(err)) != 0) {
      throw Refused{err};
    }
  }
  int64_t position() const { return api_.hasher_position(handle_); }
  std::vector<int64_t> history() const {
    std::vector<int64_t> ids(layout_.max_ngram());
    ids.resize(api_.hasher_history(handle_, ids.data()));
    return ids;
  }

 private:
  const Api& api_;
  const Layout& layout_;
  engram_hasher* handle_ = nullptr;
};

json RunTest(const Api& api, const std::string& type, const json& group, const json& test) {
  if (type == "BoundedIntegersTest") {
    if (api.bounded_integers == nullptr) throw Unsupported{"engram_bounded_integers"};
    const json& high = test.at("high");
    // high may be 2^63: pass high - 1, which always fits int64.
    const int64_t high_minus_one = high.is_number_unsigned() && high.get<uint64_t>() == (uint64_t{1} << 63)
                                       ? INT64_MAX
                                       : high.get<int64_t>() - 1;
    std::vector<int64_t> values(test.at("count").get<size_t>());
    char err[1024] = "";
    if (api.bounded_integers(test.at("seed").get<uint64_t>(), test.at("low").get<int64_t>(), high_minus_one, values.size(),
                             values.data(), err, sizeof(err)) != 0) {
      throw Refused{err};
    }
    return {{"values", values}};
  }
  if (type == "MultipliersTest") {
    if (api.multipliers == nullptr) throw Unsupported{"engram_multipliers"};
    std::vector<int64_t> m(static_cast<size_t>(std::max(0, test.at("maxNgram").get<int>())));
    char err[1024] = "";
    if (api.multipliers(test.at("seed").get<int64_t>(), test.at("layerId").get<int64_t>(),
                        test.at("compressedVocabSize").get<int64_t>(), test.at("maxNgram").get<int32_t>(), m.data(), err,
                        sizeof(err)) != 0) {
      throw Refused{err};
    }
    return {{"multipliers", m}};
  }
  if (type == "LayoutTest") {
    Layout layout(api, test);
    return {{"layers", layout.LayersJson()}};
  }
  if (type == "HashTest") {
    if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
    Layout layout(api, group);
    Hasher h(api, layout, size_t{0});
    return {{"rows", h.Append(test.at("ids").get<std::vector<int64_t>>())}};
  }
  if (type == "HashStateTest") {
    if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
    Layout layout(api, group);
    const size_t capacity = group.value("rollbackCapacity", size_t{0});
    std::map<std::string, std::unique_ptr<Hasher>> seqs;
    json steps = test.at("steps");
    for (json& step : steps) {
      const std::string op = step.at("op");
      if (op == "append") {
        auto& h = seqs[step.at("seq").get<std::string>()];
        if (!h) h = std::make_unique<Hasher>(api, layout, capacity);
        step["rows"] = h->Append(step.at("ids").get<std::vector<int64_t>>());
        step["positionAfter"] = h->position();
        step["historyAfter"] = h->history();
      } else if (op == "rollback") {
        auto& h = seqs.at(step.at("seq").get<std::string>());
        h->Rollback(step.at("k").get<size_t>());
        step["positionAfter"] = h->position();
        step["historyAfter"] = h->history();
      } else if (op == "fork") {
        seqs[step.at("to").get<std::string>()] = seqs.at(step.at("from").get<std::string>())->Fork();
      }
    }
    return {{"steps", steps}};
  }
  if (type == "HashHandoffTest") {
    if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
    Layout layout(api, group);
    const std::string fingerprint = group.value("layoutFingerprint", layout.fingerprint());
    auto segment = [&](json seg, const std::vector<int64_t>& ids) {
      Hasher h(api, layout, size_t{0});
      h.Import(seg.at("historyIn"), fingerprint);
      const size_t from = seg.at("from").get<size_t>(), to = seg.at("to").get<size_t>();
      seg["rows"] = h.Append(std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(from),
                                                  ids.begin() + static_cast<std::ptrdiff_t>(to)));
      seg["historyOut"] = {{"position", h.position()}, {"history", h.history()}};
      return seg;
    };
    if (test.contains("historyIn")) {  // an invalid test: the import must be refused
      Hasher h(api, layout, size_t{0});
      h.Import(test["historyIn"], test["historyIn"].value("layoutFingerprint", fingerprint));
      return {{"imported", true}};
    }
    if (test.contains("segments")) {
      const std::vector<int64_t> ids = test.at("ids").get<std::vector<int64_t>>();
      json segs = json::array();
      for (const json& seg : test.at("segments")) segs.push_back(segment(seg, ids));
      return {{"segments", segs}};
    }
    const auto seqs = test.at("sequences").get<std::vector<std::vector<int64_t>>>();
    json batches = json::array();
    for (const json& micro : test.at("microBatches")) {
      json out = json::array();
      for (const json& seg : micro) out.push_back(segment(seg, seqs.at(seg.at("sequence").get<size_t>())));
      batches.push_back(out);
    }
    return {{"microBatches", batches}};
  }
  throw Unsupported{"test type " + type + " (this plug-in host does not map it to the C ABI yet)"};
}

json Handle(const Api& api, const json& request) {
  const std::string op = request.value("op", "");
  try {
    if (op == "hello") {
      const engram_conformance_info_t* info = api.info();
      auto split = [](const char* s) {
        json out = json::array();
        std::string item;
        for (const char* p = s ? s : ""; ; ++p) {
          if (*p == ',' || *p == '\0') {
            if (!item.empty()) out.push_back(item);
            item.clear();
            if (*p == '\0') break;
          } else {
            item.push_back(*p);
          }
        }
        return out;
      };
      if (info->abi_version != ENGRAM_CONFORMANCE_ABI_VERSION) {
        return {{"protocol", 1}, {"name", info->name ? info->name : "?"}, {"suites", json::array()},
                {"error", "ABI version " + std::to_string(info->abi_version) + " is not " +
                              std::to_string(ENGRAM_CONFORMANCE_ABI_VERSION)}};
      }
      return {{"protocol", 1},
              {"name", info->name ? info->name : "?"},
              {"version", info->version ? info->version : ""},
              {"suites", split(info->suites)},
              {"profiles", split(info->profiles)},
              {"features", json::array({"c-abi"})}};
    }
    if (op == "contract") {
      if (api.contract_json != nullptr) {
        std::vector<char> out(1 << 22);
        char err[1024] = "";
        if (api.contract_json(out.data(), out.size(), err, sizeof(err)) == 0) {
          const json c = json::parse(out.data(), nullptr, false);
          if (c.is_discarded()) return {{"refused", "engram_contract_json wrote something that is not JSON"}};
          return {{"contract", c}};
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
      const std::string digest = conform::AccumulateHash(
          group.at("profile").get<std::string>() == "v4.1", group.at("compressedVocabSize").get<int64_t>(),
          request.at("seed").get<uint64_t>(), request.at("n").get<int64_t>(),
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

}  // namespace

void AddPluginHostCommand(CLI::App& app) {
  auto lib = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("plugin-host", "Serve the JSON-lines conformance protocol for a C-ABI library (§CONF.3)");
  cmd->add_option("--lib", *lib, "Shared library implementing engram/conformance.h")->required();
  cmd->callback([lib] {
    const Api api = LoadApi(*lib);
    std::string line;
    while (std::getline(std::cin, line)) {
      const json request = json::parse(line, nullptr, false);
      const json reply = request.is_discarded() ? json{{"refused", "plugin-host: the request is not JSON"}} : Handle(api, request);
      std::cout << reply.dump() << "\n" << std::flush;
      if (request.is_object() && request.value("op", "") == "bye") break;
    }
  });
}

}  // namespace engram::cli
