// spec/conformance.md §CONF.2 — the implementation under test.
#include "conformance/runner/peer.h"

#include <algorithm>

#include "vectors/compare.h"
#include "reference/input_files.h"
#include "base/error.h"
#include "conformance/runner/watched_json.h"

namespace engram::conform {

using json = nlohmann::ordered_json;

namespace {

// An answer line as JSON: strictly (§ERR.5, no repeated key), an object.
// Returns the problem, or "" with `out` set.
std::string ParseAnswer(const std::string& line, json& out) {
  try {
    if (!ParseWatched(line, out)) {
      out = ParseOrderedJson(line, "the answer");  // refuses with the message (or accepts: a long object)
    }
  } catch (const nlohmann::json::exception&) {  // e.g. a number out of range, thrown by the builder
    try {
      out = ParseOrderedJson(line, "the answer");
    } catch (const Error& e) {
      return std::string(e.what()) + "; the line: " + vectors::Short(json(line));
    }
  } catch (const Error& e) {
    return std::string(e.what()) + "; the line: " + vectors::Short(json(line));
  }
  if (!out.is_object()) return "the answer is not a JSON object: " + vectors::Short(json(line));
  return "";
}

std::string Joined(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A list of strings under `key`, each one of `allowed` (or "*").
std::set<std::string> NameList(const json& hello, const std::string& key, const std::set<std::string>& allowed,
                               const std::string& what) {
  if (!hello.contains(key) || !hello[key].is_array()) {
    throw Error("handshake failed: the answer to hello has no '" + key + "' list (it must name the " + what +
                " the implementation claims): " + vectors::Short(hello));
  }
  std::set<std::string> out;
  for (const json& v : hello[key]) {
    if (!v.is_string()) throw Error("handshake failed: '" + key + "' holds " + vectors::Short(v) + ", not a name");
    const std::string name = v.get<std::string>();
    if (name != "*" && allowed.count(name) == 0) {
      throw Error("handshake failed: the implementation claims " + what.substr(0, what.size() - 1) + " \"" + name +
                  "\", which is not one of the protocol's (" + Joined(allowed) + ")");
    }
    out.insert(name);
  }
  if (out.empty()) throw Error("handshake failed: the implementation claims no " + what + " ('" + key + "' is empty)");
  return out;
}

}  // namespace

Claims CheckHello(const json& hello, const std::set<std::string>& known_suites) {
  // §CONF.2 item 1: an implementation that cannot serve says so in `error`
  // (the plug-in host does for a library of another ABI version).
  if (hello.contains("error")) {
    throw Error("handshake failed: the implementation cannot run: " +
                (hello["error"].is_string() ? hello["error"].get<std::string>() : vectors::Short(hello["error"])));
  }
  Claims c;
  if (!hello.contains("name") || !hello["name"].is_string() || hello["name"].get<std::string>().empty()) {
    throw Error("handshake failed: the answer to hello has no 'name' string: " + vectors::Short(hello));
  }
  c.name = hello["name"];
  if (hello.contains("version")) {
    if (!hello["version"].is_string()) throw Error("handshake failed: 'version' is " + vectors::Short(hello["version"]) + ", not a string");
    c.version = hello["version"];
  }
  c.suites = NameList(hello, "suites", known_suites, "suites");
  c.profiles = NameList(hello, "profiles", {"v4.1", "demo-v1"}, "profiles");
  if (hello.contains("features") && !hello["features"].is_array()) {
    throw Error("handshake failed: 'features' is " + vectors::Short(hello["features"]) + ", not a list");
  }
  if (hello.contains("features")) {
    for (const json& f : hello["features"]) {
      if (!f.is_string()) throw Error("handshake failed: 'features' holds " + vectors::Short(f) + ", not a string");
      c.features.insert(f.get<std::string>());
    }
  }
  return c;
}

const json& Peer::Hello() {
  if (!process_) Start();
  return hello_;
}

Peer::Reply Peer::Call(const json& request, std::chrono::milliseconds timeout) { return CallLine(request.dump(), timeout); }

Peer::Reply Peer::CallLine(const std::string& request_line, std::chrono::milliseconds timeout) {
  Reply r;
  if (!in_flight_.empty()) throw Error("internal: Peer::CallLine with requests in flight");
  if (poisoned_) Drop();
  if (!process_) {
    try {
      Start();
    } catch (const Error& e) {
      // The previous child crashed or hung; its successor does not come up.
      r.failure = "crashed";
      r.detail = std::string("the implementation could not be restarted: ") + e.what();
      r.answered = false;
      r.counts_as_timeout = true;  // no child to answer: like a hang, it stops the suite
      return r;
    }
  }
  r = WriteRequest(request_line, timeout);
  if (!r.failure.empty()) return r;
  return ReadAnswer(timeout);
}

Peer::Reply Peer::WriteRequest(const std::string& request_line, std::chrono::milliseconds timeout) {
  Reply r;
  switch (process_->WriteLine(request_line, timeout)) {
    case ChildProcess::WriteStatus::kOk:
      break;
    case ChildProcess::WriteStatus::kTimeout:
      r.failure = "timeout";
      r.detail = "the implementation did not read the request within " + std::to_string(timeout.count()) + " ms" + Tail();
      r.answered = false;
      r.counts_as_timeout = true;
      Drop();
      return r;
    case ChildProcess::WriteStatus::kClosed:
      r.failure = "crashed";
      r.detail = "the implementation " + process_->ExitDescription() + Tail();
      r.answered = false;
      Drop();
      return r;
  }
  return r;
}

Peer::SendStatus Peer::Send(const std::string& request_line, std::chrono::milliseconds timeout, Reply* failure) {
  // A child is started (and restarted) only by CallLine: a handshake that
  // fails is reported there, once.
  if (!process_ || poisoned_ || in_flight_.size() >= kMaxInFlight) return SendStatus::kLater;
  const size_t bytes = request_line.size() + 1;
  if (!in_flight_.empty() && in_flight_bytes_ + bytes > process_->InputCapacity()) return SendStatus::kLater;
  if (in_flight_.empty()) {
    // Nothing ahead of it: exactly CallLine's write, failures included.
    *failure = WriteRequest(request_line, timeout);
    if (!failure->failure.empty()) return SendStatus::kFailed;
  } else if (process_->WriteLine(request_line, timeout) != ChildProcess::WriteStatus::kOk) {
    // The answers in flight are still read; then the child, which may hold
    // part of this line, is ended and the line sent again to a fresh one.
    poisoned_ = true;
    return SendStatus::kLater;
  }
  in_flight_.push_back(bytes);
  in_flight_bytes_ += bytes;
  return SendStatus::kSent;
}

Peer::Reply Peer::Receive(std::chrono::milliseconds timeout) {
  if (in_flight_.empty()) throw Error("internal: Peer::Receive with no request in flight");
  in_flight_bytes_ -= in_flight_.front();
  in_flight_.pop_front();
  Reply r = ReadAnswer(timeout);
  if (in_flight_.empty() && poisoned_) Drop();
  return r;
}

void Peer::Drop() {
  process_.reset();
  in_flight_.clear();
  in_flight_bytes_ = 0;
  poisoned_ = false;
}

Peer::Reply Peer::ReadAnswer(std::chrono::milliseconds timeout) {
  Reply r;
  std::string line;
  switch (process_->ReadLine(line, timeout)) {
    case ChildProcess::ReadStatus::kTimeout:
      r.failure = "timeout";
      r.detail = "no answer within " + std::to_string(timeout.count()) + " ms" + Tail();
      r.answered = false;
      r.counts_as_timeout = true;
      Drop();
      return r;
    case ChildProcess::ReadStatus::kClosed:
      r.failure = "crashed";
      r.detail = "the implementation " + process_->ExitDescription() + Tail();
      r.answered = false;
      Drop();
      return r;
    case ChildProcess::ReadStatus::kTooLong:
      // §ERR.3 the line is not read on: the answer fails and the child is
      // ended (what it still writes would be the rest of that line).
      r.failure = "garbage";
      r.detail = "the answer line is longer than " + std::to_string(ChildProcess::kMaxLineBytes >> 20) +
                 " MiB, the most the runner reads (spec/bad_inputs.md §ERR.3); the implementation was stopped" + Tail();
      Drop();
      return r;
    case ChildProcess::ReadStatus::kLine:
      break;
  }
  if (const std::string problem = ParseAnswer(line, r.body); !problem.empty()) {
    r.failure = "garbage";
    r.detail = problem;
    r.body = json();
    Drop();
  }
  return r;
}

void Peer::Bye() {
  if (process_) {
    process_->WriteLine(json{{"op", "bye"}}.dump(), std::chrono::milliseconds(2000));
    std::string line;
    process_->ReadLine(line, std::chrono::milliseconds(2000));
    Drop();
  }
}

std::string Peer::Tail() {
  std::string t = process_ ? process_->StderrTail() : "";
  return t.empty() ? "" : "; its stderr ends with: " + t;
}

void Peer::Start() {
  process_ = std::make_unique<ChildProcess>(argv_);
  const auto hello_timeout = std::max(timeout_, std::chrono::milliseconds(30000));
  process_->WriteLine(json{{"op", "hello"}, {"protocol", 1}}.dump(), hello_timeout);
  std::string line;
  auto status = process_->ReadLine(line, hello_timeout);
  if (status != ChildProcess::ReadStatus::kLine) {
    std::string why = status == ChildProcess::ReadStatus::kTimeout   ? "no answer to hello"
                      : status == ChildProcess::ReadStatus::kTooLong ? "the answer to hello is longer than " +
                                                                           std::to_string(ChildProcess::kMaxLineBytes >> 20) + " MiB"
                                                                     : process_->ExitDescription();
    std::string tail = process_->StderrTail();
    process_.reset();
    throw Error("handshake failed: " + why + (tail.empty() ? "" : "; stderr: " + tail));
  }
  json h;
  if (const std::string problem = ParseAnswer(line, h); !problem.empty()) {
    process_.reset();
    throw Error("handshake failed: " + problem);
  }
  if (!h.contains("protocol") || !h["protocol"].is_number_integer() || h["protocol"] != 1) {
    process_.reset();
    throw Error("handshake failed: protocol " + (h.contains("protocol") ? h["protocol"].dump() : "missing") + " is not 1");
  }
  // A restarted child must be the implementation the run started with: the
  // same handshake, claims included (an `error` now is a refusal too).
  // §CONF.2 compared as JSON values: ordered_json's == also compares the
  // order of object keys, which is not content (a port that builds its hello
  // from a hash map may order them differently each time it starts).
  if (!hello_.is_null() && nlohmann::json::parse(h.dump()) != nlohmann::json::parse(hello_.dump())) {
    process_.reset();
    throw Error("handshake failed: the restarted implementation answered hello differently: " + vectors::Short(h) +
                " (first: " + vectors::Short(hello_) + ")");
  }
  hello_ = h;
}

}  // namespace engram::conform
