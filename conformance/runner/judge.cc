// spec/conformance.md §CONF.4 — one test's outcome from the implementation's answer.
#include "conformance/runner/judge.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "vectors/serving.h"
#include "vectors/trivial.h"

namespace engram::conform {
namespace {

using json = nlohmann::ordered_json;

// The key and the first index of a difference's path ("rows[3][1][17]:
// expected ..." -> "rows", 3); index -1 when the path has none.
std::pair<std::string, int64_t> FirstIndex(const std::string& difference) {
  const size_t colon = difference.find(": ");
  const size_t open = difference.find('[');
  if (open == std::string::npos || (colon != std::string::npos && open > colon)) return {"", -1};
  int64_t v = 0;
  size_t i = open + 1;
  for (; i < difference.size() && std::isdigit(static_cast<unsigned char>(difference[i])); ++i) v = v * 10 + (difference[i] - '0');
  if (i == open + 1 || i >= difference.size() || difference[i] != ']') return {"", -1};
  return {difference.substr(0, open), v};
}

// The element of a per-position (or per-stream) intermediate list that the
// failing element `at` of output `key` belongs to: the same index when the
// output has one entry per intermediate (HashTest rows), at / (N / M) when
// the output is the M entries' values flattened (V41GateTest out: hc streams
// of dim values), else -1 (show the whole intermediate).
int64_t IntermediateIndex(const json& expected, const std::string& key, int64_t at, size_t intermediates) {
  if (at < 0 || intermediates == 0) return -1;
  if (key == "intermediate") return at < static_cast<int64_t>(intermediates) ? at : -1;
  if (!expected.contains(key)) return -1;
  const json& out = expected[key].is_object() && expected[key].contains("float64") ? expected[key]["float64"] : expected[key];
  if (!out.is_array() || out.empty() || out.size() % intermediates != 0) return -1;
  const int64_t per = static_cast<int64_t>(out.size() / intermediates);
  return at < static_cast<int64_t>(out.size()) ? at / per : -1;
}

// An intermediate value for people: an object one key per line (each cut at
// 1000 characters), anything else on the same line.
std::string Values(const json& v) {
  if (!v.is_object()) return " " + vectors::Short(v, 2000);
  std::string out;
  for (const auto& [key, value] : v.items()) out += "\n  " + key + ": " + vectors::Short(value, 1000);
  return out;
}

// §CONF.4 What a failing valid test shows: where the computation first goes
// wrong (the first differing intermediate, when the implementation returned
// its intermediates), then the first differing output, then the vector's
// intermediate values at that position. "" when everything matches.
std::string Mismatch(const std::string& type, const json& group, const json& test, const vectors::SplitTest& split,
                     const json& outputs, std::string& reason) {
  // The outputs first, without the returned intermediates (compared on their
  // own below); the expected intermediates stay: §FUS.9 reads the dots there.
  std::string d_out;
  if (outputs.contains("intermediate")) {
    json returned_outputs = outputs;
    returned_outputs.erase("intermediate");
    d_out = vectors::CompareOrdered(type, group, split.expected, returned_outputs);
  } else {
    d_out = vectors::CompareOrdered(type, group, split.expected, outputs);  // no copy when there is nothing to take out
  }
  const bool traced = !group.contains("tolerance");  // §CONF.1 float traces are shown, never compared
  std::string d_int;
  if (traced && split.expected.contains("intermediate") && outputs.contains("intermediate")) {
    d_int = vectors::FirstDifference(split.expected["intermediate"], outputs["intermediate"], "intermediate");
  }
  if (d_out.empty() && d_int.empty()) return "";
  const bool missing = d_out.rfind("missing output", 0) == 0 ||
                       (d_out.size() > 9 && d_out.compare(d_out.size() - 9, 9, ": missing") == 0);
  reason = missing ? "missing output" : "mismatch";
  std::string detail;
  if (!d_int.empty()) detail += "first difference in the intermediates (where the computation goes wrong): " + d_int + "\n";
  detail += "first difference in the outputs: " + (d_out.empty() ? std::string("none (only the intermediates differ)") : d_out);
  if (type == "PackedBatchTest" || type == "DraftTreeTest") {
    // §HASH.10 a packed call's failure names the request, its boundaries, the slot and its position.
    const std::string where = vectors::ServingLocation(type, group, test, d_out);
    if (!where.empty()) detail += "\n" + where;
  }
  if (test.contains("intermediate")) {
    const json& inter = test["intermediate"];
    const auto [key, index] = FirstIndex(d_int.empty() ? d_out : d_int);
    const int64_t at = inter.is_array() ? IntermediateIndex(split.expected, key, index, inter.size()) : -1;
    if (at >= 0) {
      const std::string name = "intermediate[" + std::to_string(at) + "]";
      detail += "\nexpected " + name + ":" + Values(inter[static_cast<size_t>(at)]);
      const json returned = outputs.value("intermediate", json());
      if (returned.is_array() && static_cast<size_t>(at) < returned.size()) {
        detail += "\nreturned " + name + ":" + Values(returned[static_cast<size_t>(at)]);
      }
    } else {
      detail += "\nexpected intermediate:" + Values(inter);
    }
  }
  for (const auto& [key, value] : test.items()) {  // §CONF.1 informative outputs, shown not compared
    if (key != "error" && vectors::IsInformative(type, key)) detail += "\n" + key + " (informative): " + vectors::Short(value);
  }
  return detail;
}

}  // namespace

TestResult NewResult(const std::string& suite, const json& t) {
  TestResult r;
  r.suite = suite;
  r.tc_id = t.value("tcId", int64_t{0});
  r.status = "pass";
  r.flags = t.value("flags", std::vector<std::string>{});
  r.valid = t.value("result", "") == "valid";
  return r;
}

json Kept(const json& answer) {
  std::string text = answer.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= kKeptAnswerBytes) return answer;
  const size_t total = text.size();
  text.resize(kKeptAnswerBytes);
  return "(cut: the first " + std::to_string(kKeptAnswerBytes) + " of " + std::to_string(total) +
         " bytes of the answer's JSON text) " + text;
}

void Skip(TestResult& r, const std::string& kind, const std::string& detail) {
  r.status = "skipped";
  r.reason = kind;
  r.detail = detail;
}

void Fail(TestResult& r, const std::string& reason, const std::string& detail) {
  r.status = "fail";
  r.reason = reason;
  r.detail = detail;
}

// §CONF.4 The test's outcome from the implementation's answer.
void Judge(TestResult& r, const std::string& type, const json& group, const json& test, const vectors::SplitTest& split,
           const Peer::Reply& reply) {
  const bool valid = test.value("result", "") == "valid";
  if (!reply.failure.empty()) {
    Fail(r, reply.failure, reply.detail);
    return;
  }
  const json& body = reply.body;
  // §CONF.2 item 3: an answer is exactly one of the three; anything else
  // ({"outputs": ..., "unsupported": ...}) is garbage, never a skip.
  const int kinds = int{body.contains("outputs")} + int{body.contains("refused")} + int{body.contains("unsupported")};
  if (kinds != 1) {
    Fail(r, "garbage", "the answer must hold exactly one of outputs / refused / unsupported, it holds " +
                           std::to_string(kinds) + ": " + vectors::Short(body));
    r.returned = Kept(body);
    return;
  }
  if (body.contains("unsupported")) {
    Skip(r, "unsupported", "unsupported: " + vectors::Short(body["unsupported"]));
  } else if (body.contains("refused")) {
    if (valid) {
      Fail(r, "refused valid input", "the implementation refused: " + vectors::Short(body["refused"], 400));
      r.returned = Kept(body);
    }
  } else if (!body["outputs"].is_object()) {
    Fail(r, "garbage", "the answer's outputs are not a JSON object: " + vectors::Short(body));
    r.returned = Kept(body);
  } else if (!valid) {
    std::string detail = "the vector marks this input invalid (it must be refused), but the implementation returned outputs: " +
                         vectors::Short(body["outputs"], 400);
    if (test.contains("error") && test["error"].is_string()) detail += "\nthe reference says: " + test["error"].get<std::string>();
    Fail(r, "accepted invalid input", detail);
    r.returned = Kept(body["outputs"]);
  } else {
    std::string reason;
    const std::string detail = Mismatch(type, group, test, split, body["outputs"], reason);
    if (!detail.empty()) {
      Fail(r, reason, detail);
      r.returned = Kept(body["outputs"]);
    }
  }
}

// §CONF.4 The test's flags, as what else the test guards (not a diagnosis).
void AddFlags(TestResult& r, const json& notes) {
  if (r.status != "fail" || r.flags.empty()) return;
  std::string list;
  for (const std::string& f : r.flags) {
    list += (list.empty() ? "" : ", ") + f;
    if (notes.contains(f)) list += " (" + notes[f].value("bugType", "") + ")";
  }
  r.detail += "\nthis test also guards: " + list;
}

PreparedTest PrepareTest(const std::string& suite, const std::string& label, int64_t tc_id, const json& group,
                         const json& test) {
  PreparedTest p;
  p.type = group.value("type", "");
  p.result = NewResult(label, test);
  p.result.tc_id = tc_id;
  p.split = vectors::SplitOrdered(p.type, test);
  // §CONF.4 decided here from the test itself, not from its flags: a vectors
  // directory that drops the Trivial flag cannot make an empty answer count.
  TestResult& r = p.result;
  r.trivial = r.valid && vectors::IsTrivial(group, test, p.split);
  if (r.trivial && std::find(r.flags.begin(), r.flags.end(), vectors::kTrivialFlag) == r.flags.end()) {
    r.flags.push_back(vectors::kTrivialFlag);
  }
  // The request line (§CONF.2), written as text: the same bytes as dumping
  // the request object (keys in this order), without copying the group and
  // the inputs into one first (the runner's hot path for random cases).
  p.line = "{\"op\":\"test\",\"suite\":" + json(suite).dump() + ",\"type\":" + json(p.type).dump() +
           ",\"tcId\":" + std::to_string(tc_id) + ",\"group\":";
  p.line += group.dump();
  p.line += ",\"test\":";
  p.line += p.split.inputs.dump();
  p.line += "}";
  return p;
}

TestResult JudgeReply(PreparedTest& p, const json& group, const json& test, const Peer::Reply& reply) {
  Judge(p.result, p.type, group, test, p.split, reply);
  return std::move(p.result);
}

TestResult CallTest(Peer& peer, std::chrono::milliseconds timeout, const std::string& suite, const std::string& label,
                    int64_t tc_id, const json& group, const json& test, Peer::Reply* reply_out, CaseDigest* digest) {
  // The group without its tests. Fixed vectors and random cases hand the
  // group over without them already: it is copied only when it has them.
  std::optional<json> without_tests;
  if (group.contains("tests")) {
    without_tests = group;
    without_tests->erase("tests");
  }
  const json& g = without_tests ? *without_tests : group;
  PreparedTest p = PrepareTest(suite, label, tc_id, g, test);
  if (digest != nullptr) digest->Add(p.line);
  const auto t0 = std::chrono::steady_clock::now();
  Peer::Reply reply = peer.CallLine(p.line, timeout);
  p.result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  TestResult r = JudgeReply(p, g, test, reply);
  if (reply_out != nullptr) *reply_out = std::move(reply);
  return r;
}

}  // namespace engram::conform
