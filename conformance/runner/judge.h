// spec/conformance.md §CONF.4 — one test's outcome from the implementation's
// answer: what the fixed vectors and the random cases (§CONF.7) share.
#ifndef ENGRAM_CONFORMANCE_RUNNER_JUDGE_H_
#define ENGRAM_CONFORMANCE_RUNNER_JUDGE_H_

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "vectors/compare.h"
#include "conformance/runner/peer.h"
#include "conformance/runner/runner.h"
#include "conformance/runner/shard.h"

namespace engram::conform {

// A result for test `t` of `suite`: status pass until judged.
TestResult NewResult(const std::string& suite, const nlohmann::ordered_json& t);
void Skip(TestResult& r, const std::string& kind, const std::string& detail);
void Fail(TestResult& r, const std::string& reason, const std::string& detail);
// §ERR.3 What the runner keeps of a failing answer for the reports: the
// answer itself when its JSON text is at most kKeptAnswerBytes, else the
// first kKeptAnswerBytes of that text as a string marked as cut. A port that
// fails with huge answers must not make the runner hold them all.
inline constexpr size_t kKeptAnswerBytes = 64 * 1024;
nlohmann::ordered_json Kept(const nlohmann::ordered_json& answer);

// §CONF.4 Judges the implementation's `reply` to `test` of a group of type
// `type` (`group` without its tests; `split` = vectors::SplitOrdered(type, test)).
void Judge(TestResult& r, const std::string& type, const nlohmann::ordered_json& group,
           const nlohmann::ordered_json& test, const vectors::SplitTest& split, const Peer::Reply& reply);

// §CONF.4 Appends the test's flags to a failure's detail, as what else the
// test guards (not a diagnosis).
void AddFlags(TestResult& r, const nlohmann::ordered_json& notes);

// A test made ready to send (CallTest's first half): its result so far
// (tcId, flags, trivial), its expected outputs and its request line.
struct PreparedTest {
  TestResult result;
  std::string type;
  vectors::SplitTest split;
  std::string line;  // the request (§CONF.2), one line of JSON
};
// `group` without its tests.
PreparedTest PrepareTest(const std::string& suite, const std::string& label, int64_t tc_id,
                         const nlohmann::ordered_json& group, const nlohmann::ordered_json& test);
// CallTest's second half: the result judged from the implementation's `reply`.
TestResult JudgeReply(PreparedTest& prepared, const nlohmann::ordered_json& group, const nlohmann::ordered_json& test,
                      const Peer::Reply& reply);

// Sends `test` of `group` (op "test", §CONF.2) as tcId `tc_id` of `suite` and
// judges the answer; the result is labelled `label` (the suite, or the random
// cases' "random:<suite>"). `reply_out`, when given, receives the reply;
// `digest`, when given, adds the request line (§CONF.9 item 2).
TestResult CallTest(Peer& peer, std::chrono::milliseconds timeout, const std::string& suite, const std::string& label,
                    int64_t tc_id, const nlohmann::ordered_json& group, const nlohmann::ordered_json& test,
                    Peer::Reply* reply_out = nullptr, CaseDigest* digest = nullptr);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_JUDGE_H_
