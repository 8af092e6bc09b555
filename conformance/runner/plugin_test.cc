// The C ABI of conformance/include/engram/conformance.h (spec §CONF.3) as a
// port sees it: the reference plug-in is opened with dlopen and each ABI 1.1
// entry point is called on inputs taken from the vectors, whose expected values
// (never the code under test) decide. Then `engram conform --lib` over every
// suite, and a library that lacks the new entry points. The runner's §CONF.1 /
// §FUS.9 comparison rules: vectors/compare_test.cc.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/program_paths.h"
#include "base/hex.h"
#include "conformance/runner/runner.h"
#include "engram/conformance.h"
#include "reference/fusion.h"
#include "vectors/suite_fusion.h"
#include "testutil/vectors.h"

// A namespace of its own: the suite's files are compiled together (unity build).
namespace plugin_test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;  // key order matters: §CONF.1 splits at "result"
using ojson = nlohmann::ordered_json;
using testing::HasSubstr;
// The committed vectors, and their tests found by what they are (testutil/vectors.h).
using engram::vectors::test::AnyValid;
using engram::vectors::test::Case;
using engram::vectors::test::Find;
using engram::vectors::test::Floats;
using engram::vectors::test::kVectors;
using engram::vectors::test::Slurp;
using engram::vectors::test::Suite;
using engram::vectors::test::Valid;

// ---------------------------------------------------------------- the vectors

auto AnyInvalid = [](const json&, const json& t) { return !Valid(t); };

std::vector<uint16_t> Bf16FromHex(const std::string& hex) {
  const std::optional<std::vector<uint16_t>> words = engram::U16sOfHex(hex);
  if (!words) throw std::runtime_error("'" + hex + "' is not bf16 words in lower-case hex");
  return *words;
}

std::vector<uint16_t> Bf16Rows(const json& rows) {
  std::vector<uint16_t> out;
  for (const json& r : rows) {
    const std::vector<uint16_t> v = Bf16FromHex(r.get<std::string>());
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

bool SameDouble(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

// A float output of the plug-in must be the vector's float32 mirror (the
// plug-in's default) or its float64 reference (ENGRAM_REFERENCE_PRECISION=float64), exactly.
void ExpectMirrorOrReference(const std::vector<double>& got, const json& expected, const std::string& what) {
  const std::vector<double> r = Floats(expected["float64"]), m = Floats(expected["float32"]);
  ASSERT_EQ(got.size(), r.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(SameDouble(got[i], m[i]) || SameDouble(got[i], r[i]))
        << what << "[" << i << "]: " << engram::FloatHex(got[i]) << " is neither " << engram::FloatHex(m[i]) << " nor "
        << engram::FloatHex(r[i]);
  }
}

// bf16 outputs: a faithful rounding of the vector's float64 reference (§FUS.9).
void ExpectFaithful(const std::vector<uint16_t>& got, const json& ref64, const std::string& what) {
  const std::vector<double> r = Floats(ref64);
  ASSERT_EQ(got.size(), r.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(engram::FaithfulBf16(got[i], r[i])) << what << "[" << i << "]";
}

engram_bf16_span_t Span(const std::vector<uint16_t>& v) { return {v.data(), v.size()}; }
engram_u8_span_t Span(const std::vector<uint8_t>& v) { return {v.data(), v.size()}; }
engram_f64_span_t Span(const std::vector<double>& v) { return {v.data(), v.size()}; }

// ---------------------------------------------------------------- the library through dlopen

class Abi : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    lib_ = dlopen(ENGRAM_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
  }
  template <typename F>
  static F Sym(const char* name) {
    void* p = dlsym(lib_, name);
    EXPECT_NE(p, nullptr) << name << " is not exported";
    return reinterpret_cast<F>(p);
  }
  static inline void* lib_ = nullptr;
  char err_[1024] = "";
};

// The entry point `fn` of the plug-in, typed by its declaration in the header
// (decltype only: the test binary does not link the library).
#define ABI(fn) Sym<decltype(&fn)>(#fn)

TEST_F(Abi, InfoClaimsEverySuite) {
  const engram_conformance_info_t* info = ABI(engram_conformance_info)();
  EXPECT_EQ(info->abi_version, static_cast<uint32_t>(ENGRAM_CONFORMANCE_ABI_VERSION));
  const std::string suites = info->suites;
  for (const auto& e : fs::directory_iterator(kVectors + "/v1")) {
    EXPECT_THAT("," + suites + ",", HasSubstr("," + e.path().stem().string() + ",")) << "not claimed";
  }
}

// §STO.1–§STO.3: fp8_decode through engram_decode_element (the host derives the single-format tests from it).
TEST_F(Abi, DecodeElementGivesTheFp8DecodeVectors) {
  auto decode = ABI(engram_decode_element);
  const Case c = Find("fp8_decode", "ElementDecodeTest", [](const json&, const json& t) { return t["scale"] == 0; });
  const std::vector<uint16_t> want = Bf16FromHex(c.test->at("bf16"));
  ASSERT_EQ(want.size(), 256u);
  for (int code = 0; code < 256; ++code) {
    uint16_t bits = 0;
    ASSERT_EQ(decode(static_cast<uint8_t>(code), 0, &bits, err_, sizeof err_), 0) << err_;
    // §STO.9: any NaN matches any NaN.
    const bool nan = (want[static_cast<size_t>(code)] & 0x7F80) == 0x7F80 && (want[static_cast<size_t>(code)] & 0x7F) != 0;
    if (nan) EXPECT_TRUE((bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0) << code;
    else EXPECT_EQ(bits, want[static_cast<size_t>(code)]) << "code " << code << " scale 0x00";
  }
  // E4M3 code 0x80 is -0 (f32 bits 80000000); E8M0 0x00 is 2^-127 (00400000).
  const Case e4 = Find("fp8_decode", "E4M3DecodeTest", [](const json&, const json& t) { return t["code"] == 0x80; });
  const Case e8 = Find("fp8_decode", "E8M0DecodeTest", [](const json&, const json& t) { return t["scale"] == 0; });
  uint16_t bits = 0;
  ASSERT_EQ(decode(0x80, 127, &bits, err_, sizeof err_), 0);
  EXPECT_EQ(engram::HexOfU32(static_cast<uint32_t>(bits) << 16), e4.test->at("f32Bits").get<std::string>());
  ASSERT_EQ(decode(0x38, 0, &bits, err_, sizeof err_), 0);
  EXPECT_EQ(engram::HexOfU32(static_cast<uint32_t>(bits) << 16), e8.test->at("f32Bits").get<std::string>());
}

// §STO.5, §STO.6
TEST_F(Abi, SyntheticTableLookupGivesTheVectorRows) {
  auto create = ABI(engram_table_synthetic);
  auto lookup = ABI(engram_table_lookup);
  auto destroy = ABI(engram_table_destroy);
  for (const bool edges : {false, true}) {
    const Case c = Find("table_lookup", "SyntheticLookupTest",
                        [&](const json& g, const json& t) { return Valid(t) && g["table"]["edgeRows"] == edges; });
    const json& tb = c.group->at("table");
    engram_table* table = create(tb["seed"], tb["rows"], tb["headDim"], edges ? 1 : 0, err_, sizeof err_);
    ASSERT_NE(table, nullptr) << err_;
    const auto ids = c.test->at("rowIds").get<std::vector<int64_t>>();
    std::vector<uint16_t> out(ids.size() * tb["headDim"].get<size_t>());
    ASSERT_EQ(lookup(table, ids.data(), ids.size(), out.data(), out.size(), err_, sizeof err_), 0) << err_;
    EXPECT_EQ(out, Bf16Rows(c.test->at("rows"))) << "edge rows " << edges;
    destroy(table);
  }
}

TEST_F(Abi, TableErrorsNameTheField) {
  auto create = ABI(engram_table_synthetic);
  auto lookup = ABI(engram_table_lookup);
  auto destroy = ABI(engram_table_destroy);
  EXPECT_EQ(create(1, 100, 100, 0, err_, sizeof err_), nullptr);
  EXPECT_THAT(err_, HasSubstr("head_dim"));
  EXPECT_EQ(create(1, 0, 256, 0, err_, sizeof err_), nullptr);
  EXPECT_THAT(err_, HasSubstr("rows"));
  // The invalid lookup of the vectors: an id = rows must be refused, naming the value.
  const Case c = Find("table_lookup", "SyntheticLookupTest", AnyInvalid);
  const json& tb = c.group->at("table");
  engram_table* table = create(tb["seed"], tb["rows"], tb["headDim"], 0, err_, sizeof err_);
  ASSERT_NE(table, nullptr) << err_;
  const auto ids = c.test->at("rowIds").get<std::vector<int64_t>>();
  std::vector<uint16_t> out(ids.size() * 256);
  EXPECT_NE(lookup(table, ids.data(), ids.size(), out.data(), out.size(), err_, sizeof err_), 0);
  EXPECT_THAT(err_, HasSubstr(std::to_string(ids.back())));
  // A buffer that is too small is refused, not overrun.
  EXPECT_NE(lookup(table, ids.data(), 1, out.data(), 255, err_, sizeof err_), 0);
  EXPECT_THAT(err_, HasSubstr("out"));
  destroy(table);
  // Files: a missing file and a packed file of the wrong size name the path.
  auto packed = ABI(engram_table_open_packed);
  auto safetensors = ABI(engram_table_open_safetensors);
  EXPECT_EQ(safetensors("/nonexistent/table.safetensors", "layers.1.engram.embed", err_, sizeof err_), nullptr);
  EXPECT_THAT(err_, HasSubstr("/nonexistent/table.safetensors"));
  const fs::path odd = fs::temp_directory_path() / ("engram_plugin_test_odd_" + std::to_string(::getpid()) + ".bin");
  std::ofstream(odd) << std::string(100, 'x');
  EXPECT_EQ(packed(odd.c_str(), 256, err_, sizeof err_), nullptr);
  EXPECT_THAT(err_, HasSubstr(odd.string()));
  fs::remove(odd);
}

// §STO.7: the ranks' partials, then the library's all_reduce, give the vector rows
// (including the -0 -> +0 of NegZeroAllReduce).
TEST_F(Abi, RowShardAndReduceGiveTheVectorRows) {
  auto create = ABI(engram_table_synthetic);
  auto shard = ABI(engram_table_row_shard_lookup);
  auto reduce = ABI(engram_shard_reduce);
  auto destroy = ABI(engram_table_destroy);
  int checked = 0;
  for (int world : {1, 2, 7}) {
    for (const json& g : Suite("tp_shard")["testGroups"]) {
      if (g["type"] != "RowShardTest" || g["world"] != world) continue;
      const json& tb = g["table"];
      engram_table* table = create(tb["seed"], tb["rows"], tb["headDim"], 0, err_, sizeof err_);
      ASSERT_NE(table, nullptr) << err_;
      for (const json& t : g["tests"]) {
        const auto ids = t["rowIds"].get<std::vector<int64_t>>();
        const size_t count = ids.size() * 256;
        std::vector<uint16_t> partials(static_cast<size_t>(world) * count), out(count);
        int rc = 0;
        for (int r = 0; r < world && rc == 0; ++r) {
          rc = shard(table, r, world, ids.data(), ids.size(), partials.data() + static_cast<size_t>(r) * count, count, err_,
                     sizeof err_);
        }
        if (!Valid(t)) {
          EXPECT_NE(rc, 0) << "world " << world << ": row id outside the table accepted";
          EXPECT_THAT(err_, HasSubstr(std::to_string(ids.back())));
          continue;
        }
        ASSERT_EQ(rc, 0) << err_;
        ASSERT_EQ(reduce(partials.data(), world, count, out.data(), err_, sizeof err_), 0) << err_;
        EXPECT_EQ(out, Bf16Rows(t["rows"])) << "world " << world << " tcId " << t["tcId"];
        ++checked;
      }
      destroy(table);
    }
  }
  EXPECT_GE(checked, 6);
  engram_table* table = create(1, 1000, 256, 0, err_, sizeof err_);
  ASSERT_NE(table, nullptr) << err_;
  const int64_t id = 5;
  std::vector<uint16_t> out(256);
  EXPECT_NE(shard(table, 2, 2, &id, 1, out.data(), out.size(), err_, sizeof err_), 0);
  EXPECT_THAT(err_, HasSubstr("rank"));
  EXPECT_NE(shard(table, 0, 0, &id, 1, out.data(), out.size(), err_, sizeof err_), 0);
  EXPECT_THAT(err_, HasSubstr("world"));
  EXPECT_NE(reduce(out.data(), 0, 1, out.data(), err_, sizeof err_), 0);
  EXPECT_THAT(err_, HasSubstr("world"));
  destroy(table);
}

// §STO.8: world 7 has a rank with no columns (written = 0).
TEST_F(Abi, HeadShardGatherGivesTheVectorRows) {
  auto create = ABI(engram_table_synthetic);
  auto head = ABI(engram_table_head_shard_lookup);
  auto destroy = ABI(engram_table_destroy);
  const Case c = Find("tp_shard", "HeadShardTest", [](const json& g, const json&) { return g["world"] == 7; });
  const json& tb = c.group->at("table");
  const int world = c.group->at("world"), columns = c.group->at("columns");
  engram_table* table = create(tb["seed"], tb["rows"], tb["headDim"], 0, err_, sizeof err_);
  ASSERT_NE(table, nullptr) << err_;
  const auto ids = c.test->at("rowIds").get<std::vector<int64_t>>();
  std::vector<uint16_t> gathered;
  for (int r = 0; r < world; ++r) {
    std::vector<uint16_t> part(ids.size() * 256);
    size_t written = 99;
    ASSERT_EQ(head(table, r, world, columns, ids.data(), ids.size(), part.data(), part.size(), &written, err_, sizeof err_), 0)
        << err_;
    const json& range = c.group->at("headRanges")[static_cast<size_t>(r)];
    EXPECT_EQ(written, (range[1].get<size_t>() - range[0].get<size_t>()) * 256) << "rank " << r;
    gathered.insert(gathered.end(), part.begin(), part.begin() + static_cast<std::ptrdiff_t>(written));  // one position
  }
  EXPECT_EQ(gathered, Bf16Rows(c.test->at("rows")));
  destroy(table);
}

// §STO.10
TEST_F(Abi, FloatTableLookupGivesTheVectorRows) {
  auto lookup = ABI(engram_float_table_lookup);
  const Case c = Find("table_lookup", "FloatLookupTest", AnyValid);
  const json& tb = c.group->at("table");
  const auto ids = c.test->at("rowIds").get<std::vector<int64_t>>();
  const size_t w = tb["width"];
  std::vector<float> out(ids.size() * w);
  ASSERT_EQ(lookup(tb["seed"], tb["rows"], tb["width"], ids.data(), ids.size(), out.data(), out.size(), err_, sizeof err_), 0)
      << err_;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string hex;
    for (size_t j = 0; j < w; ++j) {
      uint32_t u;
      std::memcpy(&u, &out[i * w + j], 4);
      hex += engram::HexOfU32(u);
    }
    EXPECT_EQ(hex, c.test->at("rows")[i].get<std::string>()) << "row id " << ids[i];
  }
  const Case bad = Find("table_lookup", "FloatLookupTest", AnyInvalid);
  const auto bad_ids = bad.test->at("rowIds").get<std::vector<int64_t>>();
  EXPECT_NE(lookup(tb["seed"], tb["rows"], tb["width"], bad_ids.data(), bad_ids.size(), out.data(), out.size(), err_,
                   sizeof err_),
            0);
  EXPECT_THAT(err_, HasSubstr(std::to_string(bad_ids.back())));
}

// §TOK.1–§TOK.4
TEST_F(Abi, TokenMapGivesTheVectorMap) {
  auto build = ABI(engram_token_map_build);
  auto destroy = ABI(engram_token_map_destroy);
  auto tokens = ABI(engram_token_map_tokens);
  auto size = ABI(engram_token_map_compressed_size);
  auto ids = ABI(engram_token_map_ids);
  auto check = ABI(engram_token_map_check);
  auto key = ABI(engram_token_map_key);
  const Case c = Find("token_map", "TokenMapTest", [](const json&, const json& t) { return Valid(t) && t.contains("padId"); });
  const std::string text = c.group->at("tokenizerJson");
  engram_token_map* m = build(text.data(), text.size(), err_, sizeof err_);
  ASSERT_NE(m, nullptr) << err_;
  EXPECT_EQ(tokens(m), c.test->at("tokens").get<int64_t>());
  EXPECT_EQ(size(m), c.test->at("compressedSize").get<int64_t>());
  std::vector<int64_t> map(static_cast<size_t>(tokens(m)));
  ids(m, map.data());
  EXPECT_EQ(map, c.test->at("map").get<std::vector<int64_t>>());
  int64_t pad = -7;
  ASSERT_EQ(check(m, c.test->at("padId"), -1, &pad, err_, sizeof err_), 0) << err_;
  EXPECT_EQ(pad, c.test->at("compressedPad").get<int64_t>());
  // The per-id intermediate of the vectors.
  const json& inter = c.test->at("intermediate");
  for (size_t i = 0; i < inter.size(); ++i) {
    engram_token_key_t k{};
    ASSERT_EQ(key(m, static_cast<int64_t>(i), &k), 0);
    EXPECT_EQ(std::string(k.token, k.token_len), inter[i]["token"].get<std::string>()) << i;
    EXPECT_EQ(std::string(k.text, k.text_len), inter[i]["text"].get<std::string>()) << i;
    EXPECT_EQ(std::string(k.key, k.key_len), inter[i]["key"].get<std::string>()) << i;
    EXPECT_EQ(std::string(k.key_kind), inter[i]["keyKind"].get<std::string>()) << i;
    EXPECT_EQ(k.added != 0, inter[i]["added"].get<bool>()) << i;
  }
  engram_token_key_t k{};
  EXPECT_NE(key(m, tokens(m), &k), 0);
  // A configuration whose size is not V, and a pad id outside the map, are refused naming the key.
  EXPECT_NE(check(m, c.test->at("padId"), size(m) - 1, &pad, err_, sizeof err_), 0);
  EXPECT_THAT(err_, HasSubstr("engram_compressed_vocab_size"));
  EXPECT_NE(check(m, tokens(m), -1, &pad, err_, sizeof err_), 0);
  EXPECT_THAT(err_, HasSubstr("pad id"));
  destroy(m);
  // Every tokenizer the vectors mark invalid without a configuration is refused by the builder.
  int refused = 0;
  for (const json& g : Suite("token_map")["testGroups"]) {
    if (g["type"] != "TokenMapTest") continue;  // TokenLookupTest: valid tokenizers, invalid raw ids
    for (const json& t : g["tests"]) {
      if (Valid(t) || t.contains("padId") || t.contains("engramCompressedVocabSize")) continue;
      const std::string bad = g["tokenizerJson"];
      EXPECT_EQ(build(bad.data(), bad.size(), err_, sizeof err_), nullptr) << g["comment"];
      EXPECT_THAT(err_, HasSubstr("tokenizer.json")) << g["comment"];
      ++refused;
    }
  }
  EXPECT_GE(refused, 10);
}

// ABI 1.2 (§HASH.1): engram_token_map_compress gives the vectors' compressed
// ids of every valid TokenLookupTest and refuses every invalid one.
TEST_F(Abi, TokenMapCompressGivesTheVectorIds) {
  auto build = ABI(engram_token_map_build);
  auto destroy = ABI(engram_token_map_destroy);
  auto compress = ABI(engram_token_map_compress);
  int valid = 0, invalid = 0;
  for (const json& g : Suite("token_map")["testGroups"]) {
    if (g["type"] != "TokenLookupTest") continue;
    const std::string text = g["tokenizerJson"], profile = g["profile"];
    engram_token_map* m = build(text.data(), text.size(), err_, sizeof err_);
    ASSERT_NE(m, nullptr) << err_;
    for (const json& t : g["tests"]) {
      const std::vector<int64_t> raw = t["rawIds"].get<std::vector<int64_t>>();
      std::vector<uint8_t> mask;
      if (t.contains("mask")) {
        for (const json& f : t["mask"]) mask.push_back(f.get<bool>() ? 1 : 0);
        if (mask.size() != raw.size()) continue;  // the host refuses those before the call (one byte per id)
      }
      std::vector<int64_t> out(raw.size(), 7);
      const int rc = compress(m, raw.data(), t.contains("mask") ? mask.data() : nullptr, raw.size(), profile.c_str(),
                              out.data(), err_, sizeof err_);
      if (Valid(t)) {
        EXPECT_EQ(rc, 0) << t["tcId"] << ": " << err_;
        EXPECT_EQ(out, t["ids"].get<std::vector<int64_t>>()) << t["tcId"];
        ++valid;
      } else {
        EXPECT_NE(rc, 0) << t["tcId"];
        EXPECT_STRNE(err_, "") << t["tcId"];
        ++invalid;
      }
    }
    destroy(m);
  }
  EXPECT_GE(valid, 8);
  EXPECT_GE(invalid, 8);
}

// §FUS.4, §FUS.6: the gate function at every dot of both suites.
TEST_F(Abi, GateFunctionGivesTheVectorGates) {
  auto gate = ABI(engram_gate);
  int checked = 0;
  for (const char* suite : {"gate_v41", "gate_demo"}) {
    for (const json& g : Suite(suite)["testGroups"]) {
      if (g["type"] != "GateFunctionTest") continue;
      const std::string profile = g["profile"];
      for (const json& t : g["tests"]) {
        double y = 0;
        ASSERT_EQ(gate(profile.c_str(), engram::ParseFloat(t["dot"], "dot"), &y, err_, sizeof err_), 0) << err_;
        ExpectMirrorOrReference({y}, t["gate"], std::string(suite) + " dot " + t["dot"].get<std::string>());
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 20);
  double y = 0;
  EXPECT_NE(gate("v5", 0.5, &y, err_, sizeof err_), 0);
  EXPECT_THAT(err_, HasSubstr("profile"));
}

// §FUS.3
TEST_F(Abi, V41GateGivesTheVectorOutputs) {
  auto v41 = ABI(engram_v41_gate);
  for (const json& g : Suite("gate_v41")["testGroups"]) {
    if (g["type"] != "V41GateTest") continue;
    const size_t dim = g["dim"], hc = g["hc"];
    const double eps = engram::ParseFloat(g["eps"], "eps");
    for (const json& t : g["tests"]) {
      const auto x = t["x"].get<std::vector<uint16_t>>(), key = t["key"].get<std::vector<uint16_t>>(),
                 value = t["value"].get<std::vector<uint16_t>>(), qw = t["qWeight"].get<std::vector<uint16_t>>(),
                 kw = t["kWeight"].get<std::vector<uint16_t>>();
      std::vector<double> gate(hc);
      std::vector<uint16_t> out(hc * dim);
      const int rc = v41(dim, hc, eps, Span(x), Span(key), Span(value), Span(qw), Span(kw), t["masked"].get<bool>() ? 1 : 0,
                         gate.data(), out.data(), err_, sizeof err_);
      if (!Valid(t)) {
        EXPECT_NE(rc, 0) << t["comment"];
        EXPECT_THAT(err_, HasSubstr("key"));  // the vector's invalid test: key one value short
        continue;
      }
      ASSERT_EQ(rc, 0) << err_;
      ExpectMirrorOrReference(gate, t["gate"], "gate");
      ExpectFaithful(out, t["outRef64"], "out");
      if (t["masked"].get<bool>()) {
        for (double v : gate) EXPECT_TRUE(v == 0 && !std::signbit(v)) << "a masked gate is +0";
      }
    }
  }
}

// §FUS.2
TEST_F(Abi, WkvGivesTheVectorKv) {
  auto bf16 = ABI(engram_wkv_bf16);
  auto fp8 = ABI(engram_wkv_fp8);
  int plain = 0, quantized = 0;
  for (const json& g : Suite("gate_v41")["testGroups"]) {
    if (g["type"] != "WkvTest") continue;
    for (const json& t : g["tests"]) {
      const auto e = t["e"].get<std::vector<uint16_t>>();
      const size_t nout = t["outFeatures"];
      std::vector<uint16_t> kv(nout);
      int rc = 0;
      if (t.contains("weight")) {
        const auto w = t["weight"].get<std::vector<uint16_t>>();
        rc = bf16(Span(e), Span(w), nout, kv.data(), err_, sizeof err_);
        ++plain;
      } else {
        const auto wc = t["weightCodes"].get<std::vector<uint8_t>>(), ws = t["weightScales"].get<std::vector<uint8_t>>();
        rc = fp8(Span(e), Span(wc), Span(ws), nout, kv.data(), err_, sizeof err_);
        ++quantized;
        if (!Valid(t)) {
          EXPECT_NE(rc, 0) << "NaN activation accepted";
          continue;
        }
        // Wrong lengths are refused naming the field.
        const std::vector<uint8_t> short_codes(wc.begin(), wc.end() - 1);
        EXPECT_NE(fp8(Span(e), Span(short_codes), Span(ws), nout, kv.data(), err_, sizeof err_), 0);
        EXPECT_THAT(err_, HasSubstr("weightCodes"));
        rc = fp8(Span(e), Span(wc), Span(ws), nout, kv.data(), err_, sizeof err_);
      }
      ASSERT_EQ(rc, 0) << err_;
      ExpectFaithful(kv, t["kvRef64"], "kv");
    }
  }
  EXPECT_GE(plain, 1);
  EXPECT_GE(quantized, 2);
  const std::vector<uint16_t> e(4, 0), w(7, 0);
  std::vector<uint16_t> kv(2);
  EXPECT_NE(bf16(Span(e), Span(w), 2, kv.data(), err_, sizeof err_), 0);
  EXPECT_THAT(err_, HasSubstr("weight"));
}

// The demo parameters of a group, as the ABI takes them.
struct Demo {
  std::vector<double> kw, kb, n1, n2, vw, vb, cn, cw;
  engram_demo_params_t p{};
  explicit Demo(const json& g)
      : kw(Floats(g["keyWeight"])), kb(Floats(g["keyBias"])), n1(Floats(g["norm1Weight"])), n2(Floats(g["norm2Weight"])),
        vw(Floats(g["valueWeight"])), vb(Floats(g["valueBias"])), cn(Floats(g["convNormWeight"])), cw(Floats(g["convWeight"])) {
    p = {g["hc"], g["hidden"], g["in"], g["kernel"], g["dilation"], Span(kw), Span(kb), Span(n1), Span(n2), Span(vw), Span(vb),
         Span(cn), Span(cw)};
  }
};

// §FUS.5, §FUS.6
TEST_F(Abi, DemoGateGivesTheVectorOutputs) {
  auto demo = ABI(engram_demo_gate);
  const Case c = Find("gate_demo", "DemoGateTest", AnyValid);
  const Demo q(*c.group);
  int checked = 0;
  for (const json& t : c.group->at("tests")) {
    const std::vector<double> e = Floats(t["e"]), hidden = Floats(t["hidden"]);
    std::vector<double> gate(q.p.hc), value(q.p.hc * q.p.hidden);
    const int rc = demo(&q.p, Span(e), Span(hidden), gate.data(), value.data(), err_, sizeof err_);
    if (!Valid(t)) {
      EXPECT_NE(rc, 0);
      EXPECT_THAT(err_, HasSubstr("e [in]"));  // the vector's invalid test: e one value short
      continue;
    }
    ASSERT_EQ(rc, 0) << err_;
    ExpectMirrorOrReference(gate, t["gate"], "gate");
    ExpectMirrorOrReference(value, t["value"], "value");
    ++checked;
  }
  EXPECT_GE(checked, 4);
  engram_demo_params_t broken = q.p;
  broken.conv_weight.len -= 1;
  const std::vector<double> e = Floats(c.test->at("e")), hidden = Floats(c.test->at("hidden"));
  std::vector<double> gate(q.p.hc), value(q.p.hc * q.p.hidden);
  EXPECT_NE(demo(&broken, Span(e), Span(hidden), gate.data(), value.data(), err_, sizeof err_), 0);
  EXPECT_THAT(err_, HasSubstr("conv_w"));
}

// §FUS.7
TEST_F(Abi, ShortConvGivesTheVectorOutputs) {
  auto conv = ABI(engram_short_conv);
  const Case c = Find("short_conv_demo", "ShortConvTest", AnyValid);
  const Demo q(*c.group);
  for (const json& t : c.group->at("tests")) {
    const size_t steps = t["steps"];
    const std::vector<double> value = Floats(t["value"]);
    std::vector<double> output(steps * q.p.hc * q.p.hidden);
    const int rc = conv(&q.p, steps, Span(value), output.data(), err_, sizeof err_);
    if (!Valid(t)) {
      EXPECT_NE(rc, 0);
      EXPECT_THAT(err_, HasSubstr("value"));
      continue;
    }
    ASSERT_EQ(rc, 0) << err_;
    ExpectMirrorOrReference(output, t["output"], "output");
  }
}

// §HASH.10, §HASH.11 (ABI 1.4): every `engram`-encoded test of serving_v41 (its states are the ABI's form) as one
// engram_hash_packed call; the vector's rows and states decide, and the invalid ones must be refused.
TEST_F(Abi, HashPackedGivesTheServingVectors) {
  auto layout_create = ABI(engram_layout_create);
  auto layout_destroy = ABI(engram_layout_destroy);
  auto packed = ABI(engram_hash_packed);
  size_t valid = 0, invalid = 0;
  for (const json& g : Suite("serving_v41")["testGroups"]) {
    engram_layout* layout = layout_create(g["config"].dump().c_str(), "v4.1", g["compressedVocabSize"],
                                          g["compressedPad"], err_, sizeof err_);
    ASSERT_NE(layout, nullptr) << err_;
    const size_t window = g["layers"][0]["multipliers"].size() - 1;
    const size_t per_slot = g["layers"].size() * window * g["layers"][0]["primes"][0].size();
    for (const json& t : g["tests"]) {
      if (t["encoding"] != "engram") continue;
      const auto ids = t["ids"].get<std::vector<int64_t>>(), cu = t["cuSeqlens"].get<std::vector<int64_t>>(),
                 positions = t["positions"].get<std::vector<int64_t>>();
      const size_t requests = cu.size() - 1;
      std::vector<int64_t> hp, hid(requests * window), parents, accepted;
      std::vector<size_t> hc, offsets = {0};
      for (size_t r = 0; r < requests; ++r) {
        const json& h = t["historyIn"][r];
        hp.push_back(h["position"]);
        hc.push_back(h["history"].size());
        for (size_t i = 0; i < h["history"].size(); ++i) hid[r * window + i] = h["history"][i];
      }
      engram_packed_call_t call{ids.data(), ids.size(), cu.data(), requests, positions.data(), hp.data(), hc.data(),
                                hid.data(), nullptr, nullptr, nullptr};
      if (t.contains("parents")) {
        parents = t["parents"].get<std::vector<int64_t>>();
        for (const json& path : t["accepted"]) {
          for (const json& a : path) accepted.push_back(a);
          offsets.push_back(accepted.size());
        }
        call.parents = parents.data();
        call.accepted = accepted.data();
        call.accepted_offsets = offsets.data();
      }
      std::vector<int64_t> rows(ids.size() * per_slot + 1), op(requests), oid(requests * window);
      std::vector<size_t> oc(requests);
      engram_packed_result_t out{rows.data(), rows.size(), op.data(), oc.data(), oid.data()};
      const int rc = packed(layout, &call, &out, err_, sizeof err_);
      if (!Valid(t)) {
        EXPECT_NE(rc, 0) << "tcId " << t["tcId"];
        ++invalid;
        continue;
      }
      ASSERT_EQ(rc, 0) << "tcId " << t["tcId"] << ": " << err_;
      ++valid;
      std::vector<int64_t> want;
      for (const json& slot : t["rows"]) {
        for (const json& layer : slot) {
          for (const json& v : layer) want.push_back(v);
        }
      }
      rows.resize(want.size());
      EXPECT_EQ(rows, want) << "tcId " << t["tcId"];
      for (size_t r = 0; r < requests; ++r) {
        EXPECT_EQ(op[r], t["historyOut"][r]["position"].get<int64_t>()) << "tcId " << t["tcId"] << " request " << r;
        EXPECT_EQ(std::vector<int64_t>(oid.begin() + static_cast<std::ptrdiff_t>(r * window),
                                       oid.begin() + static_cast<std::ptrdiff_t>(r * window + oc[r])),
                  t["historyOut"][r]["history"].get<std::vector<int64_t>>())
            << "tcId " << t["tcId"] << " request " << r;
      }
      // A rows buffer one value short is refused, not overrun.
      if (!want.empty()) {
        out.rows_len = want.size() - 1;
        EXPECT_NE(packed(layout, &call, &out, err_, sizeof err_), 0);
        EXPECT_THAT(err_, HasSubstr("rows"));
      }
    }
    layout_destroy(layout);
  }
  EXPECT_GT(valid, 4u);
  EXPECT_GT(invalid, 4u);
}

// §FUS.10: ids -> rows -> table -> fusion, through a layout of the ABI.
TEST_F(Abi, ForwardGivesTheVectorOutputs) {
  auto layout_create = ABI(engram_layout_create);
  auto layout_destroy = ABI(engram_layout_destroy);
  auto v41 = ABI(engram_forward_v41);
  auto demo = ABI(engram_forward_demo);
  for (const json& g : Suite("engram_forward")["testGroups"]) {
    const std::string profile = g["profile"];
    engram_layout* layout = layout_create(g["config"].dump().c_str(), profile.c_str(), g["compressedVocabSize"],
                                          g["compressedPad"], err_, sizeof err_);
    ASSERT_NE(layout, nullptr) << err_;
    for (const json& t : g["tests"]) {
      const auto ids = t["ids"].get<std::vector<int64_t>>();
      if (profile == "v4.1") {
        const auto x = t["x"].get<std::vector<uint16_t>>(), qw = g["qWeight"].get<std::vector<uint16_t>>(),
                   kw = g["kWeight"].get<std::vector<uint16_t>>();
        const auto wc = g["wkvWeightCodes"].get<std::vector<uint8_t>>(), ws = g["wkvWeightScales"].get<std::vector<uint8_t>>();
        const engram_v41_fusion_params_t p{Span(qw), Span(kw), Span(wc), Span(ws)};
        std::vector<uint16_t> out(x.size());
        std::vector<double> gate(x.size());
        size_t count = 0;
        ASSERT_EQ(v41(layout, g["tableSeed"], &p, ids.data(), ids.size(), Span(x), out.data(), gate.data(), gate.size(),
                      &count, err_, sizeof err_),
                  0)
            << err_;
        gate.resize(count);
        ExpectFaithful(out, t["outRef64"], "out");
        ExpectMirrorOrReference(gate, t["gate"], "gate");
        // Error paths: x one value short; a demo forward on a v4.1 layout.
        const std::vector<uint16_t> short_x(x.begin(), x.end() - 1);
        EXPECT_NE(v41(layout, g["tableSeed"], &p, ids.data(), ids.size(), Span(short_x), out.data(), gate.data(), x.size(),
                      &count, err_, sizeof err_),
                  0);
        EXPECT_THAT(err_, HasSubstr("x [n][hc][dim]"));
        engram_demo_params_t none{};
        std::vector<double> o(1);
        EXPECT_NE(demo(layout, 1, &none, ids.data(), ids.size(), engram_f64_span_t{o.data(), 0}, o.data(), o.data(), o.data(),
                       err_, sizeof err_),
                  0);
        EXPECT_THAT(err_, HasSubstr("not a demo-v1"));
      } else {
        const Demo q(g);
        const std::vector<double> hidden = Floats(t["hidden"]);
        const size_t per = ids.size() * q.p.hc * q.p.hidden;
        std::vector<double> output(per), after(per), gate(ids.size() * q.p.hc);
        ASSERT_EQ(demo(layout, g["tableSeed"], &q.p, ids.data(), ids.size(), Span(hidden), output.data(), after.data(),
                       gate.data(), err_, sizeof err_),
                  0)
            << err_;
        ExpectMirrorOrReference(output, t["output"], "output");
        ExpectMirrorOrReference(after, t["hiddenAfter"], "hiddenAfter");
        ExpectMirrorOrReference(gate, t["gate"], "gate");
      }
    }
    layout_destroy(layout);
  }
}

// ---------------------------------------------------------------- `engram conform --lib` over every suite

struct ConformRun {
  int exit_code;
  std::string out;
  json report;
};

// One scratch directory per test process, removed when the process ends.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("engram_plugin_test_" + std::to_string(::getpid()));
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

ConformRun Conform(const std::string& lib, const std::string& env = "") {
  static ScratchDir scratch;
  const fs::path dir = scratch.path;
  fs::create_directories(dir);
  const fs::path out = dir / "out.txt", report = dir / "report.json";
  fs::remove(report);
  const std::string cmd = env + " " + ENGRAM_CLI + " conform --vectors " + kVectors + " --lib " + lib +
                          " --accumulate-max 100000 --report-json " + report.string() + " >" + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  ConformRun r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), json()};
  if (fs::exists(report)) r.report = json::parse(Slurp(report));
  return r;
}

std::set<std::string> VectorSuites() {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(kVectors + "/v1")) out.insert(e.path().stem().string());
  return out;
}

// Every test of every suite passes through the C ABI, in both precisions the
// plug-in can answer with (§FUS.8): the float32 mirror and the float64 reference.
// The only skips are the accumulated vectors above --accumulate-max (N = 10^7:
// minutes of hashing; the accumulated suite's own tests cover them).
class ConformLib : public testing::TestWithParam<std::string> {};

TEST_P(ConformLib, ReferencePluginPassesEverySuite) {
  const ConformRun r = Conform(ENGRAM_PLUGIN, GetParam());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("conformance: OK"));
  ASSERT_TRUE(r.report.contains("results")) << r.out;
  std::map<std::string, int> passed;
  int skipped = 0;
  for (const json& t : r.report["results"]) {
    const std::string suite = t["suite"];
    if (t["status"] == "pass") {
      ++passed[suite];
    } else if (t["status"] == "skipped" && suite == "accumulated") {
      EXPECT_THAT(t["detail"].get<std::string>(), HasSubstr("exceeds --accumulate-max")) << t.dump();
      ++skipped;
    } else {
      ADD_FAILURE() << t.dump();
    }
  }
  for (const std::string& s : VectorSuites()) {
    const json doc = Suite(s);
    int n = 0;
    for (const json& g : doc["testGroups"]) n += static_cast<int>(g["tests"].size());
    EXPECT_EQ(passed[s] + (s == "accumulated" ? skipped : 0), n) << s << ": every test passes";
  }
  EXPECT_GE(passed["contract"], 1);
}

INSTANTIATE_TEST_SUITE_P(Precisions, ConformLib, testing::Values("", "ENGRAM_REFERENCE_PRECISION=float64"),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param.empty() ? "float32" : "float64"; });

// A library that exports none of the entry points (a C99 library claiming every
// suite) loads; each of its tests is `skipped` (unsupported), none fails or
// crashes. Nothing was tested, so the verdict is not OK (§CONF.4).
TEST(ConformLibMinimal, MissingEntryPointsAreSkippedNotFailures) {
  const ConformRun r = Conform(ENGRAM_MINIMAL_PLUGIN);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("nothing was tested"));
  EXPECT_THAT(r.out, testing::Not(HasSubstr("conformance: OK")));
  EXPECT_THAT(r.out, HasSubstr("\"minimal-c99\""));
  ASSERT_TRUE(r.report.contains("results")) << r.out;
  std::set<std::string> suites;
  for (const json& t : r.report["results"]) {
    EXPECT_EQ(t["status"], "skipped") << t.dump();
    suites.insert(t["suite"].get<std::string>());
    if (t["suite"] != "contract" && t["suite"] != "accumulated") {
      EXPECT_THAT(t["detail"].get<std::string>(), HasSubstr("unsupported")) << t.dump();
    }
  }
  for (const std::string& s : VectorSuites()) EXPECT_TRUE(suites.count(s)) << s;
  // The host names the entry point that is missing.
  bool named = false;
  for (const json& t : r.report["results"]) {
    if (t["suite"] == "table_lookup" && t["detail"].get<std::string>().find("engram_table_synthetic") != std::string::npos) named = true;
  }
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace plugin_test
