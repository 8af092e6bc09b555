// Randomized conformance (spec/conformance.md §CONF.7), the generators of
// vectors/random_cases.h: every case is a vector the verifier accepts (and
// valid against its schema), the same seed gives the same bytes (pinned per
// generator version), every shrink candidate is a case again, and the draws
// reach the edges the spec names. What the runner does with the cases:
// conformance/runner/random_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/program_paths.h"
#include "base/sha256.h"
#include "testutil/sanitized.h"
#include "testutil/vectors.h"
#include "vectors/generator.h"
#include "vectors/random_cases.h"

// A namespace of its own: the suite's files are compiled together (unity build).
namespace random_cases_test {
namespace {

using namespace engram::vectors::test;
using engram::vectors::DrawCase;
using engram::vectors::ojson;
using engram::vectors::RandomCase;
using engram::vectors::RandomSuite;
using engram::vectors::RandomSuites;
using nlohmann::json;
using testing::HasSubstr;

// Problems the fixed vectors' verifier finds in these cases (vectors/verify.cc
// recomputes every expected value and checks the structure).
std::vector<std::string> VerifierProblems(const RandomSuite& gen, const std::vector<RandomCase>& cases) {
  const ojson doc = engram::vectors::RandomCasesDoc(gen, cases, std::vector<std::string>(cases.size(), "case"), {"test"});
  std::vector<std::string> problems;
  const size_t checked = engram::vectors::VerifySuite(gen.suite + ".json", json::parse(doc.dump()), problems);
  if (checked != cases.size()) problems.push_back("checked " + std::to_string(checked) + " of " + std::to_string(cases.size()));
  return problems;
}

TEST(RandomCases, EveryGeneratedCaseIsAVectorTheVerifierAccepts) {
  for (const RandomSuite& gen : RandomSuites()) {
    std::vector<RandomCase> cases;
    const int64_t n = engram::testutil::SanitizedCount(300, 40);
    for (int64_t i = 0; i < n; ++i) cases.push_back(DrawCase(gen, 42, i));
    const std::vector<std::string> problems = VerifierProblems(gen, cases);
    EXPECT_TRUE(problems.empty()) << gen.suite << ": " << problems.size() << " problem(s), the first: " << problems[0];
  }
}

// The cases are valid against their suite's JSON Schema as well
// (scripts/lint_vectors.py, jsonschema: nothing of the reference), written as
// a vectors directory the way --save-failures writes one.
TEST(RandomCases, TheHandoffAndTokenMapCasesAreSchemaValidIfPresent) {
  if (Python().empty() || std::system((Python() + " -c 'import jsonschema' >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with jsonschema";
  }
  const fs::path dir = Dir() / "random-schema";
  fs::remove_all(dir);
  auto doc = [](const std::string& suite) {
    const RandomSuite& gen = *engram::vectors::FindRandomSuite(suite);
    std::vector<RandomCase> cases;
    for (int64_t i = 0; i < 50; ++i) cases.push_back(DrawCase(gen, 42, i));  // jsonschema: ~25 ms a case
    return engram::vectors::RandomCasesDoc(gen, cases, std::vector<std::string>(cases.size(), "case"), {"schema"});
  };
  std::ostringstream quiet;
  engram::vectors::WriteVectorsDir(dir, {"hash_state", "token_map"}, doc, fs::path(kVectors) / "schema", quiet);
  const fs::path out = Dir() / "lint.txt";
  const std::string cmd = Python() + " " + ENGRAM_SOURCE_DIR + "/scripts/lint_vectors.py " + dir.string() + " >" +
                          out.string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << Slurp(out);
  EXPECT_THAT(Slurp(out), HasSubstr("v1/token_map.json: OK"));
  EXPECT_THAT(Slurp(out), HasSubstr("v1/hash_state.json: OK"));
}

// §CONF.7 determinism: case i depends on (seed, suite, i) alone.
TEST(RandomCases, TheSameSeedGivesTheSameBytesInAnyOrder) {
  for (const RandomSuite& gen : RandomSuites()) {
    std::vector<std::string> forward, backward(40);
    for (int64_t i = 0; i < 40; ++i) {
      const RandomCase c = DrawCase(gen, 7, i);
      forward.push_back(c.group.dump() + c.test.dump());
    }
    for (int64_t i = 39; i >= 0; --i) {
      const RandomCase c = DrawCase(gen, 7, i);
      backward[static_cast<size_t>(i)] = c.group.dump() + c.test.dump();
    }
    EXPECT_EQ(forward, backward) << gen.suite;
    int differ = 0;
    for (int64_t i = 0; i < 40; ++i) {
      const RandomCase c = DrawCase(gen, 8, i);
      differ += c.group.dump() + c.test.dump() != forward[static_cast<size_t>(i)];
    }
    EXPECT_GT(differ, 20) << gen.suite << ": seeds 7 and 8 give mostly the same cases";
  }
}

// §CONF.7 determinism across builds and platforms: the cases of generator
// version kRandomVersion are pinned by digest in testdata/<version>.sha256. The
// release build (GCC) and the asan build (clang) both run this test, so a case
// that depends on the compiler (an argument evaluation order, a braced list of
// one json: both happened to the fixed vectors' generator) fails here. A digest
// that changes on purpose changes the generator version (kRandomVersion) and
// the file with it; the message prints the lines to commit.
TEST(RandomCases, GeneratorVersionPinsEveryCaseByteForByte) {
  const std::string path = std::string(ENGRAM_SOURCE_DIR) + "/vectors/testdata/" +
                           engram::vectors::kRandomVersion + ".sha256";
  std::map<std::string, std::string> pinned;  // "suite seed S cases 0-N" -> digest
  {
    std::istringstream lines(Slurp(path));
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty() || line[0] == '#') continue;
      ASSERT_GT(line.size(), 66u) << path << ": malformed line '" << line << "'";
      pinned[line.substr(66)] = line.substr(0, 64);
    }
  }
  std::string wanted;
  // The default cases of every generator, and (§CONF.7 policy features) the
  // cases of each feature a generator draws differently for: "SUITE +FEATURE".
  std::vector<std::pair<const RandomSuite*, std::string>> draws;
  for (const RandomSuite& gen : RandomSuites()) {
    draws.emplace_back(&gen, "");
    for (const std::string& f : gen.features) draws.emplace_back(&gen, f);
  }
  for (const auto& [gen_ptr, feature] : draws) {
    const RandomSuite& gen = *gen_ptr;
    for (uint64_t seed : {uint64_t{1}, (uint64_t{1} << 53) - 1}) {
      engram::Sha256 digest;
      constexpr int64_t kCases = 120;
      std::set<std::string> declared;
      if (!feature.empty()) declared.insert(feature);
      for (int64_t i = 0; i < kCases; ++i) {
        const RandomCase c = DrawCase(gen, seed, i, declared);
        const std::string bytes = c.group.dump() + "\n" + c.test.dump() + "\n";
        digest.Update(bytes.data(), bytes.size());
      }
      const std::string key = gen.suite + (feature.empty() ? "" : " +" + feature) + " seed " + std::to_string(seed) +
                              " cases 0-" + std::to_string(kCases - 1);
      const std::string got = digest.HexDigest();
      wanted += got + "  " + key + "\n";
      auto it = pinned.find(key);
      if (it == pinned.end()) {
        ADD_FAILURE() << path << " has no line for '" << key << "'";
      } else {
        EXPECT_EQ(it->second, got) << key << ": the cases differ from the ones " << engram::vectors::kRandomVersion
                                   << " pinned";
      }
    }
  }
  if (HasFailure()) std::cerr << "the digests of this build (" << path << "):\n" << wanted;
}

bool IsFusionSuite(const std::string& suite) {
  return suite == "gate_v41" || suite == "gate_demo" || suite == "short_conv_demo" || suite == "engram_forward";
}

// The problems of the shrink candidates of case `index` that build.
std::vector<std::string> CandidateProblems(const RandomSuite& gen, uint64_t seed, int64_t index) {
  const RandomCase c = DrawCase(gen, seed, index);
  std::vector<RandomCase> smaller;
  for (const ojson& recipe : gen.shrink(c.recipe)) {
    try {
      smaller.push_back(gen.build(recipe));
    } catch (const engram::Error&) {
    }
  }
  return VerifierProblems(gen, smaller);
}

// Every shrink candidate that builds is a vector again (the scripts of
// HashStateTest stay consistent when steps are removed). Each property case
// checks one generator, drawn with the case: building and verifying every
// candidate of every generator per case took 44 s of the release suite (and
// 125 s under ASan, busy machine) and grows with each generator; drawn, each
// comes up in about one case in (number of generators) of every run, and
// RapidCheck draws a new seed for every run.
RC_GTEST_PROP(RandomCases, ShrinkCandidatesAreCasesToo, (uint64_t seed, uint16_t index)) {
  // One generator per case, uniformly among the non-fusion ones (the fusion
  // suites: below). At full size: inRange scales with the case number
  // otherwise, favouring the first generators.
  std::vector<const RandomSuite*> gens;
  for (const RandomSuite& gen : RandomSuites()) {
    if (!IsFusionSuite(gen.suite)) gens.push_back(&gen);
  }
  const size_t which = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<size_t>(0, gens.size()));
  RC_TAG(gens[which]->suite);
  const std::vector<std::string> problems = CandidateProblems(*gens[which], seed, index);
  for (const std::string& p : problems) RC_LOG() << gens[which]->suite << ": " << p << "\n";
  RC_ASSERT(problems.empty());
}

// The same for the fusion suites over 12 cases each (4 under the sanitizers; a fusion case has some
// 20 to 60 candidates, each with its arrays re-cut: the shapes of every
// array must follow the new dim, hc, hidden, kernel, steps, positions).
TEST(RandomCases, FusionShrinkCandidatesAreCasesToo) {
  for (const RandomSuite& gen : RandomSuites()) {
    if (!IsFusionSuite(gen.suite)) continue;
    for (int64_t index = 0; index < engram::testutil::SanitizedCount(12, 4); ++index) {
      const std::vector<std::string> problems = CandidateProblems(gen, 17, index);
      EXPECT_TRUE(problems.empty()) << gen.suite << " case " << index << ": " << problems[0];
    }
  }
}

// The distributions reach what §CONF.7 says they reach.
TEST(RandomCases, TheDrawsReachTheEdgesTheSpecNames) {
  std::map<std::string, int> seen;
  auto note = [&](bool cond, const std::string& what) { seen[what] += cond ? 1 : 0; };
  for (int64_t i = 0; i < 3000; ++i) {
    for (const char* suite : {"hash_v41", "hash_demo"}) {
      const RandomCase c = DrawCase(*engram::vectors::FindRandomSuite(suite), 3, i);
      const ojson& r = c.recipe;
      const std::string s = suite;
      note(r["maxNgram"] == 5, s + " max n-gram 5");
      note(r["heads"] >= 9, s + " heads >= 9");
      note(r["layerIds"].size() == 3, s + " three layers");
      note(r["v"] >= (int64_t{1} << 30), s + " V >= 2^30");
      note(r["v"] <= 3, s + " V <= 3");
      note(r["bases"][0] >= (int64_t{1} << 32), s + " a base >= 2^32");
      note(c.test["result"] == "invalid", s + " invalid");
      note(c.type == "HashStateTest", s + " HashStateTest");
      if (c.type == "HashTest") {
        for (const ojson& id : r["ids"]) {
          note(id == -1 && s == "hash_v41", s + " DEAD");
          note(id.get<int64_t>() < -1 && s == "hash_demo", s + " negative id");
          note(id == std::numeric_limits<int64_t>::min() && s == "hash_demo", s + " INT64_MIN");
        }
      } else {
        for (const ojson& step : c.test["steps"]) {
          note(step["op"] == "fork", s + " fork");
          note(step["op"] == "rollback" && step["k"] > 0, s + " rollback");
          note(step["op"] == "rollback" && step["k"] == c.group["rollbackCapacity"], s + " rollback of the whole capacity");
        }
      }
    }
    const RandomCase l = DrawCase(*engram::vectors::FindRandomSuite("layout"), 3, i);
    note(l.test["result"] == "invalid", "layout invalid");
    note(l.profile == "demo-v1", "layout demo-v1");
    note(l.profile == "v4.1", "layout v4.1");
    const RandomCase t = DrawCase(*engram::vectors::FindRandomSuite("tp_shard"), 3, i);
    const int64_t rows = t.group["table"]["rows"], world = t.group["world"];
    note(t.type == "RowShardTest" && world > rows, "tp_shard world > rows");
    note(t.type == "RowShardTest" && rows % world != 0, "tp_shard short last shard");
    note(t.type == "HeadShardTest" && world > t.group["columns"].get<int64_t>(), "tp_shard world > columns");
    note(t.test["result"] == "invalid", "tp_shard invalid");
    note(rows == 384006168, "tp_shard V4.1 rows");
    const RandomCase lk = DrawCase(*engram::vectors::FindRandomSuite("table_lookup"), 3, i);
    note(lk.test["result"] == "invalid", "table_lookup invalid");
    if (lk.test["result"] == "valid") {
      for (const ojson& e : lk.test["intermediate"]["edgeRow"]) note(e == true, "table_lookup edge row");
    }
    const RandomCase h = DrawCase(*engram::vectors::FindRandomSuite("hash_state"), 3, i);
    note(h.recipe["kind"] == "microBatches" && h.recipe["sequences"].size() == 3, "hash_state three sequences");
    if (h.recipe["kind"] == "badHistory") note(true, "hash_state " + h.recipe["break"].get<std::string>());
    for (const ojson& seg : h.test.value("segments", ojson::array())) {
      const int64_t from = seg["from"], to = seg["to"], w = h.recipe["maxNgram"].get<int64_t>() - 1;
      note(from == to && from > 0, "hash_state an empty segment");
      note(to > from && to - from < w, "hash_state a segment shorter than the window");
      note(seg["historyIn"]["position"] >= (int64_t{1} << 31), "hash_state a history beyond 2^31");
      for (const ojson& id : seg["historyIn"]["history"]) {
        note(id == -1, "hash_state DEAD in a history");
        note(id < -1, "hash_state a negative id in a history");
      }
    }
    note(h.test.value("segments", ojson::array()).size() > 10, "hash_state decode steps");
    const RandomCase m = DrawCase(*engram::vectors::FindRandomSuite("multipliers"), 3, i);
    if (m.type == "MultipliersTest") {
      note(m.test["seed"] >= (int64_t{1} << 32), "multipliers seed >= 2^32");
      note(m.test["result"] == "invalid", "multipliers invalid");
    } else {
      note(true, "bounded " + m.test["intermediate"]["path"].get<std::string>());
    }
    if (i >= 1000) continue;  // the token-map cases cost the most; 1000 reach every edge named
    const RandomCase tm = DrawCase(*engram::vectors::FindRandomSuite("token_map"), 3, i);
    note(tm.recipe.contains("break"), "token_map " + tm.recipe.value("break", "unbroken"));
    note(tm.type == "TokenLookupTest" && tm.test["result"] == "invalid", "token_map lookup refused");
    note(tm.type == "TokenLookupTest" && tm.test.contains("mask") && tm.test["result"] == "valid", "token_map lookup mask");
    note(tm.type == "TokenMapTest" && tm.test.contains("compressedPad"), "token_map pad");
    note(tm.recipe.value("sizeCheck", "") == "wrong" && tm.test["result"] == "invalid", "token_map size check refused");
    if (tm.type == "TokenMapTest" && tm.test["result"] == "valid") {
      note(tm.test["compressedSize"] < tm.test["tokens"], "token_map ids sharing a key");
      for (const ojson& e : tm.test["intermediate"]) {
        const std::string text = e["text"];
        note(e["replacement"] == true, "token_map a text with U+FFFD");
        note(e["keyKind"] == "text", "token_map a key of kind text");
        note(e["key"] == " ", "token_map the key space");
        note(e["added"] == true && e["special"] == true, "token_map a special added token");
        note(e["added"] == true && e["token"] != text, "token_map an added token decoded through the byte table");
        note(text.find("\xCF\x82") != std::string::npos, "token_map a final sigma");
        note(text.find("\xCC\x81") != std::string::npos, "token_map a combining acute");
        note(text.find("\xE4") != std::string::npos || text.find("\xE9") != std::string::npos, "token_map CJK");
        note(text.find("\xF0\x9F") != std::string::npos, "token_map emoji");
      }
    }
  }
  for (const std::string what : {"hash_v41 DEAD", "hash_demo negative id", "hash_demo INT64_MIN", "layout invalid",
                                 "layout demo-v1", "layout v4.1", "multipliers seed >= 2^32", "multipliers invalid",
                                 "bounded constant", "bounded lemire32", "bounded masked32", "bounded raw64",
                                 "bounded lemire64", "tp_shard world > rows", "tp_shard short last shard",
                                 "tp_shard world > columns", "tp_shard invalid", "tp_shard V4.1 rows",
                                 "table_lookup invalid", "table_lookup edge row", "hash_state three sequences",
                                 "hash_state shortHistory", "hash_state longHistory", "hash_state idBeyondV",
                                 "hash_state negativeId", "hash_state otherLayout", "hash_state negativePosition",
                                 "hash_state an empty segment", "hash_state a segment shorter than the window",
                                 "hash_state a history beyond 2^31", "hash_state DEAD in a history",
                                 "hash_state a negative id in a history", "hash_state decode steps",
                                 "token_map vocabHole", "token_map duplicateVocabId", "token_map addedIdTooHigh",
                                 "token_map addedIdOfAnother", "token_map lookup refused", "token_map lookup mask",
                                 "token_map pad", "token_map size check refused", "token_map ids sharing a key",
                                 "token_map a text with U+FFFD", "token_map a key of kind text", "token_map the key space",
                                 "token_map a special added token",
                                 "token_map an added token decoded through the byte table", "token_map a final sigma",
                                 "token_map a combining acute", "token_map CJK", "token_map emoji"}) {
    EXPECT_GT(seen[what], 0) << what;
  }
  for (const std::string s : {"hash_v41", "hash_demo"}) {
    for (const std::string what : {" max n-gram 5", " heads >= 9", " three layers", " V >= 2^30", " V <= 3",
                                   " a base >= 2^32", " invalid", " HashStateTest", " fork", " rollback",
                                   " rollback of the whole capacity"}) {
      EXPECT_GT(seen[s + what], 0) << s + what;
    }
  }
}

// §TOK The generated vocabularies are ones the Hugging Face loader reads, and
// its map (hf_token_map.py: Tokenizer.from_file, decode, the normalizers
// Sequence; nothing of the reference) equals the expected map of every valid
// TokenMapTest among the first 600 cases.
TEST(RandomCases, HfTokenizersAgreeOnGeneratedVocabulariesIfPresent) {
  if (Python().empty() || std::system((Python() + " -c 'import tokenizers' >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with the Hugging Face tokenizers package";
  }
  const RandomSuite& gen = *engram::vectors::FindRandomSuite("token_map");
  std::vector<RandomCase> cases;
  int64_t ids = 0;
  for (int64_t i = 0; i < 600; ++i) {
    RandomCase c = DrawCase(gen, 5, i);
    if (c.type != "TokenMapTest" || c.test["result"] != "valid") continue;
    ids += static_cast<int64_t>(c.test["map"].size());
    cases.push_back(std::move(c));
  }
  const fs::path in = Dir() / "random_token_map.json", out = Dir() / "hf_random_token_map.json";
  std::ofstream(in) << RandomCasesDoc(gen, cases, std::vector<std::string>(cases.size(), "case"), {"hf"}).dump();
  const std::string cmd = Python() + " " + ENGRAM_SOURCE_DIR + "/conformance/crosscheck/hf_token_map.py --no-real --vectors " +
                          in.string() + " --out " + out.string() + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const json hf = json::parse(Slurp(out));
  ASSERT_EQ(hf["cases"].size(), cases.size());
  size_t agree = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const bool same = hf["cases"][i]["map"] == json::parse(cases[i].test["map"].dump());
    agree += same ? 1 : 0;
    EXPECT_TRUE(same) << cases[i].size << ": HF " << hf["cases"][i]["map"].dump() << ", the reference "
                      << cases[i].test["map"].dump() << "\n" << cases[i].group["tokenizerJson"].get<std::string>();
  }
  std::cout << "HF tokenizers " << hf["tokenizers_version"].get<std::string>() << " agrees on " << agree << " of "
            << cases.size() << " generated vocabularies (" << ids << " ids)\n";
}

// §TOK.7 "a mask of another length" is refused, the empty mask for some ids
// included (the reference's CompressIds reads an empty mask as none: the
// random cases found the expectation valid where the plug-in host refused).
TEST(RandomCases, AnEmptyMaskForSomeIdsIsRefused) {
  const RandomSuite& gen = *engram::vectors::FindRandomSuite("token_map");
  const ojson recipe = ojson::parse(R"({"kind": "lookup", "vocab": ["b:61", "b:62"], "added": [], "profile": "v4.1",
                                        "rawIds": [1], "mask": [true], "maskShort": true})");
  const RandomCase c = gen.build(recipe);
  EXPECT_EQ(c.test["mask"], ojson::array());
  EXPECT_EQ(c.test["result"], "invalid") << c.test.dump();
  ojson whole = recipe;
  whole.erase("maskShort");
  EXPECT_EQ(gen.build(whole).test["ids"], ojson::parse("[1]"));
}

// ---------------------------------------------------------------- the fusion suites

// §CONF.7 item 2: the fusion distributions reach the edges they name.
TEST(RandomCases, TheFusionDrawsReachTheEdgesTheSpecNames) {
  std::map<std::string, int> seen;
  auto note = [&](bool cond, const std::string& what) { seen[what] += cond ? 1 : 0; };
  auto bits32 = [](const ojson& b, bool bf16) { return bf16 ? b.get<uint32_t>() << 16 : b.get<uint32_t>(); };
  auto values = [&](const std::string& s, const ojson& a, bool bf16) {
    for (const ojson& b : a) {
      const uint32_t f = bits32(b, bf16), field = (f >> 23) & 0xFF, mant = f & 0x7FFFFF;
      note(f == 0x80000000u, s + " -0");
      note(field == 0 && mant != 0, s + " subnormal");
      note(field >= 0xF0 && field != 0xFF, s + " huge");
      note(field == 0xFF && mant == 0, s + " inf");
      note(field == 0xFF && mant != 0, s + " NaN");
    }
  };
  for (int64_t i = 0; i < 400; ++i) {
    const RandomCase g = DrawCase(*engram::vectors::FindRandomSuite("gate_v41"), 3, i);
    const ojson& r = g.recipe;
    note(g.test["result"] == "invalid", "gate_v41 invalid");
    if (g.type == "GateFunctionTest") {
      const uint64_t b = r["dot"];
      const double d = std::bit_cast<double>(b);
      note(b == 0, "dot +0");
      note(b == 0x8000000000000000ULL, "dot -0");
      note(d != d, "dot NaN");
      note(d == std::numeric_limits<double>::infinity() || d == -std::numeric_limits<double>::infinity(), "dot inf");
      note(((b >> 52) & 0x7FF) == 0 && (b << 1) != 0, "dot subnormal");
      note(d != 0 && std::fabs(d) > 0.5e-6 && std::fabs(d) < 2e-6, "dot near the clamp");
    } else if (g.type == "V41GateTest") {
      note(r["masked"] == true, "V41GateTest masked");
      note(r["eps"] != std::bit_cast<uint64_t>(1e-20), "V41GateTest eps other than 1e-20");
      values("V41GateTest", r["x"], true);
      values("V41GateTest", r["value"], true);
    } else {
      note(r["fp8"] == true && r["out"] > 128, "WkvTest fp8, out > 128");
      note(r["fp8"] == false, "WkvTest bf16");
    }
    const RandomCase d = DrawCase(*engram::vectors::FindRandomSuite("gate_demo"), 3, i);
    note(d.test["result"] == "invalid", "gate_demo invalid");
    note(d.type == "GateFunctionTest", "gate_demo GateFunctionTest");
    if (d.type == "DemoGateTest") {
      values("DemoGateTest", d.recipe["e"], false);
      bool tiny = true;  // every hidden value below 2^-10: the norm's eps matters (§FUS.5)
      for (const ojson& b : d.recipe["state"]) tiny = tiny && ((b.get<uint32_t>() >> 23) & 0xFF) < 117;
      note(tiny, "DemoGateTest tiny hidden state");
    }
    const RandomCase c = DrawCase(*engram::vectors::FindRandomSuite("short_conv_demo"), 3, i);
    const int64_t kernel = c.recipe["kernel"], dilation = c.recipe["dilation"];
    note(c.test["result"] == "invalid", "short_conv_demo invalid");
    if (c.type == "ShortConvTest") {
      const int64_t steps = c.recipe["steps"];
      note(kernel == 1, "ShortConvTest kernel 1");
      note(steps > (kernel - 1) * dilation && kernel > 1, "ShortConvTest steps past the whole kernel");
      values("ShortConvTest", c.recipe["value"], false);
    } else {
      // §FUS.12: imports, decode steps, chunks across the window, rollbacks of
      // the whole depth, and states that refuse an input.
      note(c.recipe.contains("stateIn"), "ShortConvStateTest imported state");
      note(c.test["result"] == "invalid", "ShortConvStateTest invalid");
      int64_t depth = 0, appends = 0;
      const int64_t capacity = c.recipe["rollbackCapacity"];
      for (const ojson& call : c.recipe["calls"]) {
        if (call["op"] == "rollback") {
          note(call["k"] > 0 && call["k"] == depth, "ShortConvStateTest rollback of the whole depth");
          depth -= call["k"].get<int64_t>();
          continue;
        }
        const int64_t steps = call["steps"];
        note(steps == 1 && appends > 0, "ShortConvStateTest decode step after a call");
        note(steps > (kernel - 1) * dilation && kernel > 1, "ShortConvStateTest chunk past the whole kernel");
        values("ShortConvStateTest", call["value"], false);
        depth = std::min(depth + steps, capacity);
        ++appends;
      }
      note(appends > 1, "ShortConvStateTest several appends");
    }
    if (i >= 200) continue;  // a forward case costs more
    const RandomCase f = DrawCase(*engram::vectors::FindRandomSuite("engram_forward"), 3, i);
    note(f.test["result"] == "invalid", "engram_forward invalid");
    note(f.profile == "v4.1", "engram_forward v4.1");
    note(f.profile == "demo-v1", "engram_forward demo-v1");
    note(f.recipe["layerIds"].size() == 2, "engram_forward two layers");
    for (const ojson& id : f.recipe["ids"]) note(id == -1, "engram_forward DEAD");
  }
  for (const std::string what :
       {"gate_v41 invalid", "dot +0", "dot -0", "dot NaN", "dot inf", "dot subnormal", "dot near the clamp",
        "V41GateTest masked", "V41GateTest eps other than 1e-20", "V41GateTest -0", "V41GateTest subnormal",
        "V41GateTest huge", "V41GateTest inf", "V41GateTest NaN", "WkvTest fp8, out > 128", "WkvTest bf16",
        "gate_demo invalid", "gate_demo GateFunctionTest", "DemoGateTest -0", "DemoGateTest subnormal",
        "DemoGateTest huge", "DemoGateTest tiny hidden state", "short_conv_demo invalid", "ShortConvTest kernel 1",
        "ShortConvTest steps past the whole kernel", "ShortConvTest NaN", "ShortConvTest inf",
        "ShortConvStateTest imported state", "ShortConvStateTest invalid", "ShortConvStateTest rollback of the whole depth",
        "ShortConvStateTest decode step after a call", "ShortConvStateTest chunk past the whole kernel",
        "ShortConvStateTest several appends", "ShortConvStateTest NaN", "engram_forward invalid",
        "engram_forward v4.1", "engram_forward demo-v1", "engram_forward two layers", "engram_forward DEAD"}) {
    EXPECT_GT(seen[what], 0) << what;
  }
}

}  // namespace
}  // namespace random_cases_test
