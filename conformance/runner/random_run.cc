// spec/conformance.md §CONF.7 — the runner's random phase.
#include "conformance/runner/random_run.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <sstream>

#include "conformance/runner/judge.h"
#include "base/error.h"
#include "vectors/generator.h"
#include "vectors/random_stream.h"

namespace engram::conform {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string Label(const std::string& suite) { return "random:" + suite; }

// Whether the implementation is asked this case at all: its suite is claimed
// (checked by the caller), and so is the case's profile, and --profile lets it.
bool InScope(const Options& o, const Claims& claims, const vectors::RandomCase& c) {
  if (c.profile.empty()) return true;
  if (o.profile && c.profile != *o.profile) return false;
  return claims.Profile(c.profile);
}

// The test object of case `c` as tcId `tc_id` (the group, the test with its tcId).
json TestOf(int64_t tc_id, const vectors::RandomCase& c) {
  json test = {{"tcId", tc_id}, {"comment", ""}, {"flags", json::array()}, {"specRef", c.spec_refs}};
  for (const auto& [k, v] : c.test.items()) test[k] = v;
  return test;
}

// The case as the implementation sees it: the group, the test with its tcId.
TestResult Ask(std::chrono::milliseconds timeout, Peer& peer, const std::string& suite, int64_t tc_id,
               const vectors::RandomCase& c, Peer::Reply* reply) {
  return CallTest(peer, timeout, suite, Label(suite), tc_id, c.group, TestOf(tc_id, c), reply, nullptr);
}

// A drawn case waiting its turn in the pipeline (RunRandom).
struct Pending {
  int64_t index = 0;  // 0-based; tcId = index + 1
  vectors::RandomCase c;
  std::string generator_error;  // the case could not be generated: the suite stops there
  bool in_scope = false;
  PreparedTest prepared;
  enum class State { kWaiting, kSent, kReplied, kTaken } state = State::kWaiting;
  Peer::Reply reply;  // kReplied: the answer read ahead (or the write's failure)
};

// How many drawn cases the runner holds ahead of the one it judges.
constexpr int64_t kWindow = 32;

// Writes the requests of the waiting cases, in order, while the peer takes
// them (Peer::Send); stops at the first it does not, and at the time budget.
void SendAhead(const Options& o, Peer& peer, std::deque<Pending>& window, Clock::time_point deadline) {
  for (Pending& p : window) {
    if (Clock::now() >= deadline) return;
    if (!p.generator_error.empty()) return;
    if (!p.in_scope || p.state != Pending::State::kWaiting) continue;
    Peer::Reply failure;
    switch (peer.Send(p.prepared.line, o.timeout, &failure)) {
      case Peer::SendStatus::kSent:
        p.state = Pending::State::kSent;
        continue;
      case Peer::SendStatus::kFailed:
        p.reply = std::move(failure);
        p.state = Pending::State::kReplied;
        return;
      case Peer::SendStatus::kLater:
        return;
    }
  }
}

// After a failed answer the peer holds nothing in flight: the cases sent
// ahead are sent again (to the restarted implementation).
void Unsend(std::deque<Pending>& window) {
  for (Pending& p : window) {
    if (p.state == Pending::State::kSent) p.state = Pending::State::kWaiting;
  }
}

// How long to wait for an answer: the per-test timeout, cut at the time
// budget (--random-seconds) when that comes first (`cut` says so).
std::chrono::milliseconds Wait(const Options& o, Clock::time_point deadline, bool* cut) {
  *cut = false;
  if (deadline == Clock::time_point::max()) return o.timeout;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left >= o.timeout) return o.timeout;
  *cut = true;
  return std::max(left, std::chrono::milliseconds(1));
}

// The answer to the oldest sent case (window.front() when it was sent).
Peer::Reply ReceiveOne(Peer& peer, Pending& p, std::deque<Pending>& window, std::chrono::milliseconds wait) {
  const auto t0 = Clock::now();
  Peer::Reply r = peer.Receive(wait);
  p.prepared.result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (peer.InFlight() == 0) Unsend(window);  // a failure dropped the rest (or nothing was left)
  return r;
}

// The answer to window.front(): read ahead, read now, or (when it could not
// be sent ahead) asked now, waiting at most `wait`.
Peer::Reply TakeReply(Peer& peer, std::deque<Pending>& window, std::chrono::milliseconds wait) {
  Pending& p = window.front();
  const Pending::State was = p.state;
  p.state = Pending::State::kTaken;
  if (was == Pending::State::kReplied) return std::move(p.reply);
  if (was == Pending::State::kSent) return ReceiveOne(peer, p, window, wait);
  const auto t0 = Clock::now();
  Peer::Reply r = peer.CallLine(p.prepared.line, wait);
  p.prepared.result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

// Reads the answers of every case sent ahead (in order) and keeps them; at
// the time budget the rest are not waited for: the implementation, which
// holds them, is stopped (a fresh one serves what comes next). Returns the
// number of requests so abandoned.
int64_t ReceiveAll(const Options& o, Peer& peer, std::deque<Pending>& window, Clock::time_point deadline) {
  int64_t abandoned = 0;
  for (Pending& p : window) {
    if (peer.InFlight() == 0) break;
    if (p.state != Pending::State::kSent) continue;
    bool cut = false;
    const std::chrono::milliseconds wait = Wait(o, deadline, &cut);
    if (Clock::now() >= deadline) {
      abandoned = static_cast<int64_t>(peer.InFlight());
      peer.Abandon();
      break;
    }
    const int64_t ahead = static_cast<int64_t>(peer.InFlight());
    p.reply = ReceiveOne(peer, p, window, wait);
    p.state = Pending::State::kReplied;
    if (cut && !p.reply.answered && p.reply.failure == "timeout") {  // the budget ran out while waiting
      abandoned += ahead;
      peer.Abandon();
      break;
    }
  }
  Unsend(window);
  return abandoned;
}

struct Shrunk {
  vectors::RandomCase best;
  TestResult result;
  int steps = 0;      // accepted shrink steps
  int64_t calls = 0;  // implementation calls spent
};

// §CONF.7 Greedy shrinking: take the first candidate (smaller by the case's
// measure, buildable, in scope) that still fails for the same reason, and
// start again from it; stop when no candidate fails or the budget is spent.
// A candidate that fails differently (a timeout where there was a mismatch)
// is another bug, not a smaller instance of this one, and is not taken; so is
// an input that must be refused for another rule than the original (the
// reference's error up to its first digit differs). Shrinking stops after
// --max-timeouts unanswered calls in a row: a hanging port must not spend the
// whole budget at the timeout each.
Shrunk Shrink(const Options& o, Peer& peer, const Claims& claims, const vectors::RandomSuite& gen, int64_t tc_id,
              const vectors::RandomCase& failing, const TestResult& first, Clock::time_point deadline) {
  Shrunk s{failing, first, 0, 0};
  auto rule = [](const vectors::RandomCase& c) {
    const std::string e = c.test.value("error", "");
    return e.substr(0, e.find_first_of("0123456789"));
  };
  const std::string first_rule = rule(failing);
  int unanswered = 0;
  bool progress = true;
  while (progress && s.calls < o.shrink_calls && Clock::now() < deadline) {
    progress = false;
    for (const json& recipe : gen.shrink(s.best.recipe)) {
      if (Clock::now() >= deadline) break;  // §CONF.7 the time budget bounds shrinking too
      vectors::RandomCase cand;
      try {
        cand = gen.build(recipe);
      } catch (const Error&) {
        continue;  // a recipe the generator cannot build (an empty layout, ...)
      }
      if (cand.measure >= s.best.measure || !InScope(o, claims, cand)) continue;
      if (cand.test.value("result", "") != failing.test.value("result", "") || rule(cand) != first_rule) continue;
      Peer::Reply reply;
      bool cut = false;
      TestResult r = Ask(Wait(o, deadline, &cut), peer, gen.suite, tc_id, cand, &reply);
      ++s.calls;
      unanswered = reply.answered ? 0 : unanswered + 1;
      if (o.max_consecutive_timeouts > 0 && unanswered >= o.max_consecutive_timeouts) return s;
      if (r.status == "fail" && r.reason == s.result.reason) {
        s.best = std::move(cand);
        s.result = std::move(r);
        ++s.steps;
        progress = true;
        break;
      }
      if (s.calls >= o.shrink_calls) break;
    }
  }
  return s;
}

}  // namespace

std::string Quoted(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                        std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void CheckSaveFailures(const fs::path& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw Error("--save-failures " + dir.string() + ": exists and is not a directory");
    if (!fs::is_empty(dir, ec)) throw Error("--save-failures " + dir.string() + ": is not empty (the failures are written into a new or empty directory)");
    // §CONF.7 An empty directory must take files: probed before the run.
    std::string probe = (dir / ".probe-XXXXXX").string();
    const int fd = ::mkstemp(probe.data());
    if (fd < 0) throw Error("--save-failures " + dir.string() + ": cannot write in it: " + std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
    return;
  }
  const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  if (fs::exists(parent, ec) && !fs::is_directory(parent, ec)) {
    throw Error("--save-failures " + dir.string() + ": " + parent.string() + " is not a directory");
  }
  if (!fs::is_directory(parent, ec)) throw Error("--save-failures " + dir.string() + ": the directory " + parent.string() + " does not exist");
  // §CONF.7 The directory is created and removed again now, as a probe: one
  // that cannot be created (under /proc, on a read-only file system) is found
  // before the run, not after it, when the shrunk cases would be lost.
  if (::mkdir(dir.c_str(), 0777) != 0) {
    throw Error("--save-failures " + dir.string() + ": cannot create the directory: " + std::strerror(errno));
  }
  ::rmdir(dir.c_str());
}

std::string ReplayLine(const Options& o) {
  std::string line = "engram conform --vectors " + Quoted(o.vectors.string()) + " " + o.implementation_args + " --random " + std::to_string(o.random_cases) + " --seed " + std::to_string(o.random_seed) +
                     " --random-only";
  for (const std::string& s : o.suites) line += " --suite " + Quoted(s);
  if (o.profile) line += " --profile " + *o.profile;
  for (const std::string& f : o.features) line += " --features " + Quoted(f);
  // §CONF.9 a shard's cases are its share: its replay runs that share.
  if (o.shard.Partial()) line += " --shard-index " + std::to_string(o.shard.index) + " --shard-count " + std::to_string(o.shard.count);
  return line;
}

// §CONF.7 The policy features declared (hello `features` and --features):
// the cases that depend on a policy the spec leaves open are drawn only for
// an implementation that declared it. Says which in the report and a line.
std::set<std::string> DeclaredFeatures(const Options& o, const Claims& claims, RandomRun& out) {
  std::set<std::string> declared = o.features;
  declared.insert(claims.features.begin(), claims.features.end());
  json policies = json::array();
  std::string policy_names;
  for (const auto& [name, meaning] : vectors::PolicyFeatures()) {
    if (declared.count(name) == 0) continue;
    policies.push_back(name);
    policy_names += (policy_names.empty() ? "" : ", ") + name;
  }
  out.report["features"] = policies;
  out.lines.push_back("random: policy features declared: " +
                      (policy_names.empty() ? std::string("none (only the outcomes the spec makes mandatory are drawn)")
                                            : policy_names + " (their cases are drawn too)"));
  return declared;
}

// §CONF.7 A failing random case, shrunk: its result (kept, with the sizes
// before and after), its line in the report and its recipe for
// --save-failures.
void RecordFailure(const Options& o, Peer& peer, const Claims& claims, const vectors::RandomSuite& gen, int64_t i,
                   const vectors::RandomCase& c, const TestResult& r, RandomRun& out, json& shrunk_report,
                   Clock::time_point deadline) {
  const Shrunk s = Shrink(o, peer, claims, gen, i + 1, c, r, deadline);
  TestResult f = s.result;
  f.tc_id = i + 1;
  f.detail = "random case " + std::to_string(i + 1) + " of seed " + std::to_string(o.random_seed) + " (" + c.type +
             "): before shrinking " + c.size + "; after " + std::to_string(s.steps) + " shrink step(s) (" +
             std::to_string(s.calls) + " calls) " + s.best.size + "\n" + f.detail;
  shrunk_report.push_back({{"case", i + 1}, {"type", c.type}, {"reason", r.reason}, {"before", c.size},
                           {"after", s.best.size}, {"shrinkSteps", s.steps}, {"shrinkCalls", s.calls},
                           {"measureBefore", c.measure}, {"measureAfter", s.best.measure}});
  out.failing[gen.suite].push_back(s.best);
  out.cases[gen.suite].push_back(i + 1);
  out.comments[gen.suite].push_back("random case " + std::to_string(i + 1) + " of seed " + std::to_string(o.random_seed) +
                                    " (" + vectors::kRandomVersion + ", spec " + vectors::kSpecVersion +
                                    "), shrunk from " + c.size + " to " + s.best.size);
  out.counts[Label(gen.suite)].Add(f);
  out.results.push_back(std::move(f));
}

// §CONF.2 Draws cases into the window until it holds kWindow or the share is
// drawn; a generator error ends the drawing (the case carries it).
void FillWindow(const Options& o, const Claims& claims, const vectors::RandomSuite& gen, vectors::CaseStream& stream,
                std::deque<Pending>& window, std::vector<vectors::RandomCase>& spent, int64_t& next_draw, int64_t end,
                bool& draw_failed) {
  while (!draw_failed && next_draw < end && static_cast<int64_t>(window.size()) < kWindow) {
    Pending& p = window.emplace_back();
    p.index = next_draw++;
    if (!spent.empty()) {  // Next() hands a spent case back to the stream's threads to free
      p.c = std::move(spent.back());
      spent.pop_back();
    }
    try {
      stream.Next(p.c);
    } catch (const Error& e) {  // a generator bug: say so, never skip quietly
      p.generator_error = e.what();
      draw_failed = true;
      break;
    }
    p.in_scope = InScope(o, claims, p.c);
    // The case's test as it is: its tcId is the result's (PrepareTest), its
    // flags none, like the test object Ask builds (TestOf).
    if (p.in_scope) p.prepared = PrepareTest(gen.suite, Label(gen.suite), p.index + 1, p.c.group, p.c.test);
  }
}

// §CONF.7 A failing case beyond --max-shrunk: kept and counted as it failed, not shrunk.
void KeepUnshrunk(const Options& o, const vectors::RandomSuite& gen, int64_t i, const vectors::RandomCase& c, TestResult f,
                  RandomRun& out) {
  f.tc_id = i + 1;
  f.detail = "random case " + std::to_string(i + 1) + " of seed " + std::to_string(o.random_seed) + " (" + c.type +
             "): " + c.size + ", not shrunk (--max-shrunk " + std::to_string(o.max_shrunk) + ")\n" + f.detail;
  out.counts[Label(gen.suite)].Add(f);
  out.results.push_back(std::move(f));
}

bool SuiteTally::ShrinksNextFailure(const Options& o) const {
  // §CONF.7 beyond --max-shrunk a failing case is kept and counted as it failed, not shrunk (a nightly that
  // keeps drawing after the first bug reports how often it recurs without shrinking every instance).
  return o.max_shrunk < 0 || failures - unshrunk < o.max_shrunk;
}

std::string SuiteTally::StopAfterCase(const Options& o, bool past_deadline) const {
  if (o.max_consecutive_timeouts > 0 && unanswered_in_a_row >= o.max_consecutive_timeouts) return "--max-timeouts";
  if (o.max_random_failures > 0 && failures >= o.max_random_failures) return "--max-random-failures";
  // §CONF.7 a time budget per suite: the cases judged so far count, the rest are not drawn.
  if (past_deadline) return "--random-seconds";
  return "";
}

std::string SuiteTally::Line(const std::string& suite, int64_t trivial, int64_t range) const {
  std::string line = "random: " + suite + ": " + std::to_string(asked) + " case(s) asked";
  if (trivial > 0) line += " (" + std::to_string(trivial) + " trivial passes not counted as tested)";
  if (out_of_scope > 0) line += ", " + std::to_string(out_of_scope) + " of another profile not asked";
  if (failures > 0) line += ", " + std::to_string(failures) + " failing";
  if (unshrunk > 0) line += " (" + std::to_string(unshrunk) + " of them not shrunk: --max-shrunk)";
  if (!stopped.empty() && drawn < range) line += " (stopped after case " + std::to_string(drawn) + ": " + stopped + ")";
  if (abandoned > 0) {
    line += " (" + std::to_string(abandoned) + " request(s) written ahead were not waited for at the time budget; the "
            "implementation was stopped)";
  }
  return line;
}

namespace {

// What one suite's random phase shares with the run: the options, the peer, the claims and the run's record.
struct RandomContext {
  const Options& o;
  Peer& peer;
  const Claims& claims;
  const std::set<std::string>& declared;
  RandomRun& out;
  std::ostream& progress;
  Clock::time_point start;
  Clock::time_point last_progress;
};

// Judges the reply to the case at the window's front and records it: counted, kept unshrunk, or shrunk.
void JudgeFront(RandomContext& x, const vectors::RandomSuite& gen, std::deque<Pending>& window, Pending& p,
                const Peer::Reply& reply, SuiteTally& t, CaseDigest& digest, json& shrunk_report,
                Clock::time_point deadline) {
  ++t.asked;
  ++x.out.asked;
  digest.Add(p.prepared.line);
  TestResult r = JudgeReply(p.prepared, p.c.group, p.c.test, reply);
  t.unanswered_in_a_row = reply.answered ? 0 : t.unanswered_in_a_row + (reply.counts_as_timeout ? 1 : 0);
  if (r.status == "fail" && !t.ShrinksNextFailure(x.o)) {
    ++t.failures;
    ++t.unshrunk;
    KeepUnshrunk(x.o, gen, p.index, p.c, std::move(r), x.out);
  } else if (r.status == "fail") {
    ++t.failures;
    t.abandoned += ReceiveAll(x.o, x.peer, window, deadline);  // the answers ahead, read before shrinking asks anew
    RecordFailure(x.o, x.peer, x.claims, gen, p.index, p.c, r, x.out, shrunk_report, deadline);
  } else {
    x.out.counts[Label(gen.suite)].Add(r);  // counted, not kept (§ERR.3)
  }
}

// §CONF.7 One suite's random cases: drawn ahead, asked, judged and shrunk in index order.
void RunRandomSuite(RandomContext& x, const vectors::RandomSuite& gen) {
  const Options& o = x.o;
  SuiteTally t;
  json shrunk_report = json::array();
  // §CONF.9 a shard draws its share of the indices, the same cases a whole run draws there.
  const auto [first, end] = ShardRange(o.random_cases, o.shard.index, o.shard.count);
  const auto suite_start = Clock::now();
  x.out.ranges[Label(gen.suite)] = {first, end};
  CaseDigest& digest = x.out.digests[Label(gen.suite)];
  x.out.counts[Label(gen.suite)];  // a shard with no case of a suite still reports its counts
  vectors::CaseStream stream(gen, o.random_seed, end - first, o.random_threads, 256, x.declared, first);
  // §CONF.2 A bounded pipeline: the cases ahead of the one being judged are drawn and their requests written
  // (Peer::Send), so the implementation computes them meanwhile. Each case is still counted, digested, judged
  // and shrunk in index order, exactly as one at a time: drawing further than a stop changes no count, and
  // the answers written ahead of a stop are read and dropped.
  std::deque<Pending> window;
  std::vector<vectors::RandomCase> spent;
  int64_t next_draw = first;
  bool draw_failed = false;
  // §CONF.7 --random-seconds bounds the suite's time, answers awaited included.
  const Clock::time_point deadline =
      o.random_seconds > 0 ? suite_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.random_seconds))
                           : Clock::time_point::max();
  while (t.stopped.empty()) {
    FillWindow(o, x.claims, gen, stream, window, spent, next_draw, end, draw_failed);
    if (window.empty()) break;
    if (Clock::now() >= deadline) {
      t.stopped = "--random-seconds";
      break;
    }
    SendAhead(o, x.peer, window, deadline);
    Pending& p = window.front();
    if (!p.generator_error.empty()) {
      x.out.suite_problems[Label(gen.suite)].push_back("case " + std::to_string(p.index + 1) +
                                                       " could not be generated: " + p.generator_error);
      t.stopped = "a generator error";
      break;
    }
    ++t.drawn;
    if (!p.in_scope) {
      ++t.out_of_scope;
      spent.push_back(std::move(p.c));
      window.pop_front();
      continue;
    }
    bool cut = false;
    const int64_t ahead = std::max<int64_t>(1, static_cast<int64_t>(x.peer.InFlight()));  // this request and those after
    Peer::Reply reply = TakeReply(x.peer, window, Wait(o, deadline, &cut));
    if (cut && !reply.answered && reply.failure == "timeout") {
      // The budget ran out while waiting: the case is not judged (nor counted), and what was written ahead is
      // not waited for.
      t.abandoned += ahead;
      x.peer.Abandon();
      Unsend(window);
      t.stopped = "--random-seconds";
      break;
    }
    const int64_t i = p.index;
    JudgeFront(x, gen, window, p, reply, t, digest, shrunk_report, deadline);
    spent.push_back(std::move(p.c));
    window.pop_front();
    const auto now = Clock::now();
    if (now - x.last_progress >= std::chrono::seconds(2)) {
      x.last_progress = now;
      x.progress << "random: " << gen.suite << " " << (i + 1) << "/" << o.random_cases << " cases, " << t.failures
                 << " failing, " << std::chrono::duration<double>(now - x.start).count() << " s elapsed\n"
                 << std::flush;
    }
    t.stopped = t.StopAfterCase(o, now >= deadline);
    if (t.stopped == "--max-timeouts") {
      x.out.suite_problems[Label(gen.suite)].push_back("stopped after " + std::to_string(t.unanswered_in_a_row) +
                                                       " consecutive unanswered cases (--max-timeouts)");
    }
  }
  // Requests written ahead of a stop: their answers are read and dropped, so that the next suite (or bye)
  // reads its own; not past the time budget.
  t.abandoned += ReceiveAll(o, x.peer, window, deadline);
  x.out.lines.push_back(t.Line(gen.suite, x.out.counts[Label(gen.suite)].trivial, end - first));
  for (const json& s : shrunk_report) {
    x.out.lines.push_back("random: " + gen.suite + " case " + s["case"].dump() + " (" + s["type"].get<std::string>() +
                          ", " + s["reason"].get<std::string>() + "): shrunk from " + s["before"].get<std::string>() +
                          " to " + s["after"].get<std::string>());
  }
  x.out.report["suites"][gen.suite] = {{"drawn", t.drawn}, {"asked", t.asked}, {"otherProfile", t.out_of_scope},
                                       {"failing", t.failures}, {"shrunk", shrunk_report}};
  if (o.shard.Partial()) x.out.report["suites"][gen.suite]["cases"] = {first, end};
}

}  // namespace

RandomRun RunRandom(const Options& o, Peer& peer, const Claims& claims, std::ostream& progress) {
  RandomRun out;
  out.report = {{"seed", o.random_seed}, {"casesPerSuite", o.random_cases}, {"generator", vectors::kRandomVersion},
                {"specVersion", vectors::kSpecVersion}, {"replay", ReplayLine(o)}, {"suites", json::object()}};
  out.lines.push_back("random: seed " + std::to_string(o.random_seed) + ", " + std::to_string(o.random_cases) +
                      " cases per suite (" + vectors::kRandomVersion + ", spec " + vectors::kSpecVersion + ")");
  const std::set<std::string> declared = DeclaredFeatures(o, claims, out);
  RandomContext x{o, peer, claims, declared, out, progress, Clock::now(), Clock::now()};
  for (const vectors::RandomSuite& gen : vectors::RandomSuites()) {
    if (!o.suites.empty() && o.suites.count(gen.suite) == 0) continue;
    if (!claims.Suite(gen.suite)) continue;
    RunRandomSuite(x, gen);
  }
  if (out.asked == 0) out.lines.push_back("random: no random case was drawn (no claimed suite with a generator)");
  out.lines.push_back("random: replay with: " + ReplayLine(o));
  return out;
}

void SaveFailures(const Options& o, const RandomRun& run, std::ostream& log) {
  if (o.save_failures.empty() || run.failing.empty()) return;
  std::vector<std::string> suites;
  for (const auto& [suite, cases] : run.failing) suites.push_back(suite);
  auto doc = [&](const std::string& suite) {
    return vectors::RandomCasesDoc(*vectors::FindRandomSuite(suite), run.failing.at(suite), run.comments.at(suite),
                                   {"Failing random cases of one engram conform run, shrunk (spec/conformance.md §CONF.7).",
                                    "Generated by: " + ReplayLine(o)});
  };
  std::ostringstream quiet;
  vectors::WriteVectorsDir(o.save_failures, suites, doc, o.vectors / "schema", quiet);
  log << "random: the shrunk failing case(s) are in " << o.save_failures.string() << "; replay them with: engram conform --vectors "
      << Quoted(o.save_failures.string()) << " " << o.implementation_args << "\n";
}

}  // namespace engram::conform
