// cuda/cuda_plugin_test.cc — libengram_cuda_plugin.so through `engram conform --lib`
// (spec §CONF.3): the CUDA implementation is checked against the
// vectors by the same runner and plug-in host as the reference and any port.
//
//  * host emulation (ENGRAM_CUDA_PLUGIN_BACKEND=host, runs everywhere): every
//    claimed suite runs and passes; the tests a claimed suite cannot run are
//    exactly those whose entry points engram::cuda does not have;
//  * ENGRAM_CUDA_PLUGIN_BACKEND=device without a GPU: exit 0, nothing claimed,
//    everything skipped, and the name says why;
//  * on a GPU (DeviceCount() > 0): the device run passes like the host run;
//  * the plug-in's own bookkeeping (rollback beyond the slot's history, fork,
//    import, refused ids) against engram::HashState, as a property over random
//    operation sequences, through the C ABI (dlopen), on the default backend.
//
// Expected counts come from the vector files (tests per type), never from the
// plug-in.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/program_paths.h"
#include "cuda/engram_cuda.h"
#include "engram/conformance.h"
#include "reference/config.h"
#include "base/error.h"
#include "reference/fusion.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/storage.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kVectors = std::string(ENGRAM_SOURCE_DIR) + "/vectors";
// Accumulated vectors with more positions than this would be skipped (the
// runner's --accumulate-max). All of them run: the two 10^7-position vectors
// take about 11 s in host emulation (measured on 2 shared cores).
constexpr int64_t kAccumulateMax = 10000000;

// What the plug-in claims and which test types of a claimed suite it cannot
// run: engram::cuda has no entry point for them (the host reports them
// `skipped`, "unsupported: <entry point>").
const std::set<std::string> kClaimed = {"hash_v41",   "hash_demo",    "hash_state", "accumulated",
                                        "fp8_decode", "table_lookup", "tp_shard",   "gate_v41",
                                        "gate_demo",  "short_conv_demo", "engram_forward"};
// ShortConv carried across calls (§FUS.12) has no CUDA kernel yet.
const std::map<std::string, std::string> kUnsupportedTypes = {
    {"ShortConvStateTest", "engram_conv_state_* entry points"}};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ConformRun {
  int exit_code = -1;
  std::string out;
  json report;
  double seconds = 0;
};

ConformRun Conform(const std::string& backend) {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::temp_directory_path() /
                       ("engram_cuda_plugin_test_" + std::to_string(::getpid()) + "_" + info->name());
  fs::create_directories(dir);
  const fs::path out = dir / "out.txt", report = dir / "report.json";
  fs::remove(report);
  const std::string cmd = "ENGRAM_CUDA_PLUGIN_BACKEND=" + backend + " " + ENGRAM_CLI + " conform --vectors " + kVectors +
                          " --lib " + ENGRAM_CUDA_PLUGIN + " --accumulate-max " + std::to_string(kAccumulateMax) +
                          " --report-json " + report.string() + " >" + out.string() + " 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  ConformRun r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out);
  if (fs::exists(report)) r.report = json::parse(Slurp(report));
  fs::remove_all(dir);
  return r;
}

// The implementation's name as the handshake reported it.
std::string Name(const ConformRun& r) {
  if (!r.report.contains("implementation") || !r.report["implementation"].contains("name")) return "";
  return r.report["implementation"]["name"].get<std::string>();
}

// Per suite: the number of tests, and of tests of each type (accumulated: by n).
struct SuiteCounts {
  int tests = 0;
  std::map<std::string, int> by_type;
  int accumulated_over_max = 0;
};

std::map<std::string, SuiteCounts> VectorCounts() {
  std::map<std::string, SuiteCounts> out;
  for (const auto& e : fs::directory_iterator(kVectors + "/v1")) {
    if (e.path().extension() != ".json") continue;
    const json doc = json::parse(Slurp(e.path()));
    SuiteCounts& c = out[e.path().stem().string()];
    for (const json& g : doc["testGroups"]) {
      for (const json& t : g["tests"]) {
        ++c.tests;
        ++c.by_type[g.value("type", "")];
        if (t.contains("n") && t["n"].get<int64_t>() > kAccumulateMax) ++c.accumulated_over_max;
      }
    }
  }
  return out;
}

// Every claimed suite ran: its tests pass except the types engram::cuda has no
// entry point for and the accumulated vectors above kAccumulateMax; unclaimed
// suites are skipped as such.
void ExpectClaimedSuitesPass(const ConformRun& r) {
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("conformance: OK"), std::string::npos) << r.out;
  ASSERT_TRUE(r.report.contains("results")) << r.out;
  std::set<std::string> claimed;
  for (const json& s : r.report["implementation"]["suites"]) claimed.insert(s.get<std::string>());
  EXPECT_EQ(claimed, kClaimed);

  std::map<std::string, std::map<std::string, int>> status;  // suite -> status -> count
  for (const json& t : r.report["results"]) {
    const std::string suite = t["suite"], st = t["status"], detail = t["detail"];
    ++status[suite][st];
    if (st == "fail") ADD_FAILURE() << t.dump();
    if (st != "skipped") continue;
    if (!kClaimed.count(suite) && suite != "contract") {
      EXPECT_NE(detail.find("not claimed"), std::string::npos) << t.dump();
    } else if (suite == "accumulated") {
      EXPECT_NE(detail.find("exceeds --accumulate-max"), std::string::npos) << t.dump();
    } else {
      bool known = false;
      for (const auto& [type, entry] : kUnsupportedTypes) known = known || detail.find(entry) != std::string::npos;
      EXPECT_TRUE(known && detail.find("unsupported") != std::string::npos) << t.dump();
    }
  }
  for (const auto& [suite, c] : VectorCounts()) {
    if (!kClaimed.count(suite)) {
      EXPECT_EQ(status[suite]["skipped"], c.tests) << suite << ": not claimed, every test skipped";
      continue;
    }
    int runnable = c.tests - c.accumulated_over_max;
    for (const auto& [type, entry] : kUnsupportedTypes) {
      auto it = c.by_type.find(type);
      if (it != c.by_type.end()) runnable -= it->second;
    }
    EXPECT_GT(runnable, 0) << suite;
    EXPECT_EQ(status[suite]["pass"], runnable) << suite << ": every test engram::cuda can run passes";
  }
  EXPECT_GE(status["contract"]["pass"], 1) << "the layouts the hasher consumes match the vectors'";
}

TEST(CudaPlugin, HostEmulationPassesEveryClaimedSuite) {
  const ConformRun r = Conform("host");
  std::cout << "host emulation conform run: " << r.seconds << " s\n";
  EXPECT_EQ(Name(r), "engram-cuda (host emulation)") << r.out;
  ExpectClaimedSuitesPass(r);
}

TEST(CudaPlugin, ForcedDeviceWithoutGpuClaimsNothing) {
  if (engram::cuda::DeviceCount() > 0) GTEST_SKIP() << "a GPU is present: " << engram::cuda::DeviceDescription(0);
  // A plug-in that claims nothing cannot be tested: the run does not start
  // (§CONF.2, exit 2), and the plug-in's name says why.
  const ConformRun r = Conform("device");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("suites is empty"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ENGRAM_CUDA_PLUGIN_BACKEND=device but no CUDA device"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("conformance: OK"), std::string::npos) << r.out;
}

TEST(CudaPlugin, UnknownBackendClaimsNothing) {
  const ConformRun r = Conform("gpu");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("suites is empty"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ENGRAM_CUDA_PLUGIN_BACKEND=\"gpu\" is neither"), std::string::npos) << r.out;
}

TEST(CudaPlugin, DevicePassesEveryClaimedSuite) {
  if (engram::cuda::DeviceCount() == 0) GTEST_SKIP() << engram::cuda::DeviceDescription(0);
  const ConformRun r = Conform("device");
  std::cout << "device conform run: " << r.seconds << " s\n";
  // "engram-cuda (NVIDIA H200)": the device's name, not the emulation.
  const std::string device = engram::cuda::DeviceDescription(0);
  EXPECT_EQ(Name(r), "engram-cuda (" + device.substr(0, device.find(',')) + ")") << r.out;
  ExpectClaimedSuitesPass(r);
}

// ---------------------------------------------------------------- the hasher entry points against HashState

// The plug-in's hasher entry points, looked up as the plug-in host does.
struct HasherApi {
  decltype(&engram_layout_create) layout_create = nullptr;
  decltype(&engram_layout_destroy) layout_destroy = nullptr;
  decltype(&engram_layout_fingerprint) layout_fingerprint = nullptr;
  decltype(&engram_hasher_create) create = nullptr;
  decltype(&engram_hasher_fork) fork = nullptr;
  decltype(&engram_hasher_destroy) destroy = nullptr;
  decltype(&engram_hasher_append) append = nullptr;
  decltype(&engram_hasher_rollback) rollback = nullptr;
  decltype(&engram_hasher_position) position = nullptr;
  decltype(&engram_hasher_history) history = nullptr;
  decltype(&engram_hasher_import) import = nullptr;
};

const HasherApi& Api() {
  static const HasherApi api = [] {
    void* lib = dlopen(ENGRAM_CUDA_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) throw engram::Error(std::string("dlopen: ") + dlerror());
    HasherApi a;
    auto bind = [&](const char* name, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr) throw engram::Error(std::string(ENGRAM_CUDA_PLUGIN) + " does not export " + name);
    };
    bind("engram_layout_create", a.layout_create);
    bind("engram_layout_destroy", a.layout_destroy);
    bind("engram_layout_fingerprint", a.layout_fingerprint);
    bind("engram_hasher_create", a.create);
    bind("engram_hasher_fork", a.fork);
    bind("engram_hasher_destroy", a.destroy);
    bind("engram_hasher_append", a.append);
    bind("engram_hasher_rollback", a.rollback);
    bind("engram_hasher_position", a.position);
    bind("engram_hasher_history", a.history);
    bind("engram_hasher_import", a.import);
    return a;
  }();
  return api;
}

// The groups of the HashStateTest vectors: their configurations (the shipped
// ones and tiny layouts with V = 12, where rows collide) for both profiles.
const std::vector<json>& StateGroups() {
  static const std::vector<json> groups = [] {
    std::vector<json> out;
    for (const char* suite : {"hash_v41", "hash_demo"}) {
      const json doc = json::parse(Slurp(kVectors + "/v1/" + suite + ".json"));
      for (const json& g : doc["testGroups"]) {
        if (g["type"] == "HashStateTest") out.push_back(g);
      }
    }
    return out;
  }();
  return groups;
}

// One sequence both ways: the plug-in's handle and the reference state.
struct Sequence {
  engram_hasher* handle;
  engram::HashState state;
};

void ExpectSameState(const HasherApi& api, const Sequence& s, size_t max_ngram) {
  RC_ASSERT(api.position(s.handle) == s.state.position());
  std::vector<int64_t> got(max_ngram);
  got.resize(api.history(s.handle, got.data()));
  RC_ASSERT(got == s.state.History());
}

// The plug-in accepts exactly what the reference accepts.
void Agree(const std::string& what, bool ok, bool ref_ok, const char* err) {
  if (ok && !ref_ok) RC_FAIL(what + ": the plug-in accepted what the reference refuses");
  if (!ok && ref_ok) RC_FAIL(what + ": the plug-in refused what the reference accepts: " + err);
}

// §HASH.5, §HASH.6, §HASH.9 Appends (with DEAD, negative and refused ids),
// rollbacks (also deeper than the retained history), forks and imports (also
// malformed ones) give the rows, refusals, positions and histories of
// engram::HashState.
RC_GTEST_PROP(CudaPluginHasher, OperationsMatchHashState, ()) {
  const HasherApi& api = Api();
  const json& g = *rc::gen::elementOf(StateGroups());
  const bool v41 = g["profile"] == "v4.1";
  const int64_t vocab = g["compressedVocabSize"], pad = g["compressedPad"];
  const size_t capacity = *rc::gen::inRange<size_t>(0, 6);
  const std::string profile = g["profile"];
  const engram::Layout ref = engram::BuildLayout(engram::ParseConfig(g["config"], "config", engram::ParseProfile(profile)),
                                                 vocab, pad);
  char err[1024] = "";
  engram_layout* layout = api.layout_create(g["config"].dump().c_str(), profile.c_str(), vocab, pad, err, sizeof err);
  if (layout == nullptr) RC_FAIL(std::string("engram_layout_create refused: ") + err);
  char fingerprint[65] = "";
  api.layout_fingerprint(layout, fingerprint);
  RC_ASSERT(std::string(fingerprint) == engram::LayoutFingerprint(ref));  // what exported histories carry
  const size_t max_ngram = static_cast<size_t>(ref.max_ngram);
  const size_t per_id = ref.layers.size() * static_cast<size_t>(ref.columns());

  std::vector<Sequence> seqs;
  auto add = [&](engram_hasher* h, engram::HashState state) {
    if (h == nullptr) RC_FAIL(std::string("engram_hasher_create/fork gave NULL: ") + err);
    seqs.push_back(Sequence{h, std::move(state)});
  };
  add(api.create(layout, capacity, err, sizeof err), engram::HashState(ref, capacity));
  // An id of the §HASH.1 domain, now and then the special ones, rarely a refused one.
  const auto id_gen = rc::gen::weightedOneOf<int64_t>({
      {12, rc::gen::inRange<int64_t>(0, vocab)},
      {2, v41 ? rc::gen::just(int64_t{engram::kDead}) : rc::gen::inRange<int64_t>(-1000, 0)},
      {1, rc::gen::elementOf(v41 ? std::vector<int64_t>{-2, vocab, INT64_MIN} : std::vector<int64_t>{vocab, INT64_MAX})},
  });
  const int ops = *rc::gen::inRange(1, 25);
  for (int op = 0; op < ops; ++op) {
    Sequence& s = seqs[*rc::gen::inRange<size_t>(0, seqs.size())];
    switch (*rc::gen::inRange(0, 5)) {
      case 0:
      case 1: {  // append a chunk (empty, one decode step, or a prefill chunk)
        const auto ids = *rc::gen::container<std::vector<int64_t>>(*rc::gen::inRange<size_t>(0, 9), id_gen);
        std::vector<int64_t> rows(ids.size() * per_id);
        const bool ok = api.append(s.handle, ids.data(), ids.size(), rows.data(), err, sizeof err) == 0;
        std::vector<int64_t> want;
        bool ref_ok = true;
        try {
          s.state.Append(ids, want);
        } catch (const engram::Error&) {
          ref_ok = false;
        }
        Agree("append", ok, ref_ok, err);
        if (ok) RC_ASSERT(rows == want);
        break;
      }
      case 2: {  // rollback, sometimes deeper than capacity or position allow
        const size_t k = *rc::gen::inRange<size_t>(0, capacity + max_ngram + 2);
        const bool ok = api.rollback(s.handle, k, err, sizeof err) == 0;
        bool ref_ok = true;
        try {
          s.state.Rollback(k);
        } catch (const engram::Error&) {
          ref_ok = false;
        }
        Agree("rollback by " + std::to_string(k), ok, ref_ok, err);
        break;
      }
      case 3: {  // fork
        engram::HashState copy = s.state;
        add(api.fork(s.handle), std::move(copy));
        break;
      }
      case 4: {  // import the exported history into a fresh sequence, sometimes spoiled
        engram::HashHistory h = s.state.Export();
        switch (*rc::gen::inRange(0, 6)) {
          case 0: h.position = -1 - h.position; break;
          case 1: h.ids.push_back(0); break;
          case 2: h.layout_fingerprint = std::string(64, 'f'); break;
          case 3: if (!h.ids.empty()) h.ids.back() = vocab; break;
          default: break;
        }
        engram_hasher* fresh = api.create(layout, capacity, err, sizeof err);
        if (fresh == nullptr) RC_FAIL(std::string("engram_hasher_create refused: ") + err);
        const bool ok = api.import(fresh, h.position, h.ids.data(), h.ids.size(), h.layout_fingerprint.c_str(), err,
                                   sizeof err) == 0;
        bool ref_ok = true;
        try {
          add(fresh, engram::HashState::Import(ref, h, capacity));
        } catch (const engram::Error&) {
          ref_ok = false;
          api.destroy(fresh);
        }
        Agree("import", ok, ref_ok, err);
        break;
      }
    }
    for (const Sequence& each : seqs) ExpectSameState(api, each, max_ngram);
  }
  for (const Sequence& each : seqs) api.destroy(each.handle);
  api.layout_destroy(layout);
}

// §FUS.4 / §FUS.6 engram_gate through the plug-in equals the reference's
// float32 mirror for any double dot: within float32's range the mirror's own
// value; below it (|dot| < 2^-149 rounds to ±0 in float32) the gate of the
// double, whose sign sign() (demo-v1) must still see.
TEST(CudaPlugin, GateFunctionOfTinyAndOrdinaryDots) {
  void* lib = dlopen(ENGRAM_CUDA_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  const auto gate_fn = reinterpret_cast<decltype(&engram_gate)>(dlsym(lib, "engram_gate"));
  ASSERT_NE(gate_fn, nullptr);
  for (const char* profile : {"v4.1", "demo-v1"}) {
    const bool v41 = std::string(profile) == "v4.1";
    for (double dot : {1e-300, -1e-300, 0x1p-150, -0x1p-151, 1e-46, 0.0, -0.0, 1e-7, -3.5, 0.25, 1e-6}) {
      double got = 0;
      char err[256] = "";
      ASSERT_EQ(gate_fn(profile, dot, &got, err, sizeof err), 0) << err;
      const float as_float = static_cast<float>(dot);
      // The mirror of a float32 implementation: the double's own gate when the
      // float32 rounding would lose the sign's information.
      const double mirror_input = (as_float == 0.0f && dot != 0.0) ? dot : static_cast<double>(as_float);
      const double want = v41 ? engram::GateV41(mirror_input, engram::Precision::kFloat32).gate
                              : engram::GateDemo(mirror_input, engram::Precision::kFloat32).gate;
      EXPECT_EQ(got, want) << profile << " dot " << dot;
    }
  }
  dlclose(lib);
}


// §STO.10 engram_float_table_lookup through the plug-in: rows of the
// synthetic float table equal LookupFloatRows bit for bit (float32 ==, which
// the table's finite values make exact), and every bad argument is refused
// with a message naming it and nothing written to `out`.
TEST(CudaPlugin, FloatTableLookupRowsAndRefusals_STO10) {
  void* lib = dlopen(ENGRAM_CUDA_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  const auto lookup = reinterpret_cast<decltype(&engram_float_table_lookup)>(dlsym(lib, "engram_float_table_lookup"));
  ASSERT_NE(lookup, nullptr);
  const uint64_t seed = 2026;
  const int64_t rows = 37, width = 5;
  const std::vector<int64_t> ids = {0, 36, 5, 5, 17};
  std::vector<float> out(ids.size() * width, -1.0f);
  char err[256] = "";
  ASSERT_EQ(lookup(seed, rows, width, ids.data(), ids.size(), out.data(), out.size(), err, sizeof err), 0) << err;
  const std::vector<float> want = engram::LookupFloatRows(*engram::SyntheticFloatTable(seed, rows, width), ids);
  ASSERT_EQ(out.size(), want.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want[i])) << i;

  struct Bad {
    int64_t rows, width;
    std::vector<int64_t> ids;
    size_t out_len;
    std::string names;  // the message must contain this
  };
  const std::vector<Bad> cases = {
      {0, width, {0}, 64, "rows: 0"},
      {-3, width, {0}, 64, "rows: -3"},
      {rows, 0, {0}, 64, "width: 0"},
      {rows, -1, {0}, 64, "width: -1"},
      {rows, width, {0, 1}, 9, "out"},
      {rows, width, {0, 37}, 64, "index 1 (row 37)"},
      {rows, width, {-1}, 64, "index 0 (row -1)"},
  };
  for (const Bad& b : cases) {
    std::vector<float> sink(64, 7.0f);
    char msg[256] = "";
    EXPECT_NE(lookup(seed, b.rows, b.width, b.ids.data(), b.ids.size(), sink.data(), b.out_len, msg, sizeof msg), 0)
        << b.names;
    EXPECT_NE(std::string(msg).find(b.names), std::string::npos) << "message: " << msg;
    EXPECT_EQ(sink, std::vector<float>(64, 7.0f)) << "a refused call wrote to out: " << b.names;
  }
  dlclose(lib);
}

}  // namespace
