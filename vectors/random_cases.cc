// spec/conformance.md §CONF.7 — the case generators' registry and what they share.
#include "vectors/random_cases.h"

#include <cmath>

#include "base/error.h"
#include "base/splitmix64.h"
#include "vectors/suite.h"

namespace engram::vectors {

CaseRng::CaseRng(uint64_t seed, const std::string& suite, int64_t index) {
  // The stream key: the seed, then the suite name (FNV-1a, so that suites do
  // not share draws), then the case index, each mixed in through one SplitMix64
  // step. Case i is rebuilt from (seed, suite, i) alone: no case depends on
  // how many draws an earlier case made.
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : suite) h = (h ^ c) * 0x100000001B3ULL;
  state_ = seed;
  state_ = Next() ^ h;
  state_ = Next() ^ static_cast<uint64_t>(index);
  Next();
}

uint64_t CaseRng::Next() { return SplitMix64Mix(state_ += kSplitMix64Golden); }

int64_t CaseRng::Scaled(int64_t lo, int64_t hi) {
  // 1 in 8: an end point; otherwise lo + (a number of a random bit length).
  if (Chance(1, 16)) return lo;
  if (Chance(1, 16)) return hi;
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);  // unsigned: any range
  const int b = static_cast<int>(In(0, BitLength(span)));
  const uint64_t limit = b >= 64 ? span : std::min(span, (uint64_t{1} << b) - 1);
  const uint64_t x = limit == UINT64_MAX ? Next() : Next() % (limit + 1);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + x);
}

const std::vector<RandomSuite>& RandomSuites() {
  static const std::vector<RandomSuite> suites = {RandomMultipliers(), RandomLayout(),     RandomHash(true),
                                                  RandomHash(false),   RandomTableLookup(), RandomTpShard(),
                                                  RandomHashState(),   RandomTokenMap(),    RandomGateV41(),
                                                  RandomGateDemo(),    RandomShortConv(),   RandomEngramForward(),
                                                  RandomServing()};
  return suites;
}

const RandomSuite* FindRandomSuite(const std::string& suite) {
  for (const RandomSuite& s : RandomSuites()) {
    if (s.suite == suite) return &s;
  }
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> RandomCoverage() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& name : SuiteNames()) {
    if (FindRandomSuite(name) != nullptr) {
      out.emplace_back(name, "");
    } else if (name == "fp8_decode") {
      out.emplace_back(name, "its vectors are exhaustive: every code under every scale byte");
    } else if (name == "accumulated") {
      out.emplace_back(name, "its vectors already draw 10^7 positions from a counter-based stream");
    } else {
      out.emplace_back(name, "no generator yet (§CONF.7 lists the suites that have one)");
    }
  }
  return out;
}

const std::vector<std::pair<std::string, std::string>>& PolicyFeatures() {
  static const std::vector<std::pair<std::string, std::string>> kFeatures = {
      {"rollback-retained",
       "§HASH.6: a state with rollback capacity c accepts every rollback whose ids the last max n-gram - 1 + c ids "
       "it consumed still hold (a rollback forgets the ids it removes, appends refill), as the reference does, "
       "beyond the mandatory rollback depth"},
      {"segment-reset",
       "§HASH.12: a position that restarts at 0 inside a request of a packed call starts a fresh segment (no id "
       "before it enters the later windows), as NeMo Automodel's hasher and onnxruntime's end-of-sequence reset do; "
       "the official V4.1 code does not reset, so no default case restarts a position"},
  };
  return kFeatures;
}

std::set<std::string> SuiteFeatures(const RandomSuite& suite, const std::set<std::string>& declared) {
  std::set<std::string> out;
  for (const std::string& f : suite.features) {
    if (declared.count(f) != 0) out.insert(f);
  }
  return out;
}

RandomCase DrawCase(const RandomSuite& suite, uint64_t seed, int64_t index, const std::set<std::string>& declared) {
  const std::set<std::string> mine = SuiteFeatures(suite, declared);
  if (suite.draw_case) return suite.draw_case(seed, index, mine);
  if (mine.empty() || !suite.draw_declared) return suite.build(suite.draw(seed, index));
  return suite.build(suite.draw_declared(seed, index, mine));
}

ojson RandomCasesDoc(const RandomSuite& suite, const std::vector<RandomCase>& cases,
                     const std::vector<std::string>& comments, const std::vector<std::string>& header) {
  SuiteBuilder b(suite.suite, suite.schema, suite.algorithm);
  for (const std::string& line : header) b.Header(line);
  for (size_t i = 0; i < cases.size(); ++i) {
    const size_t g = b.Group(cases[i].group);
    b.Test(g, i < comments.size() ? comments[i] : "", {}, cases[i].spec_refs, cases[i].test);
  }
  return b.Finish();
}

}  // namespace engram::vectors
