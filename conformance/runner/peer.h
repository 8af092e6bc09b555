// spec/conformance.md §CONF.2 — the implementation under test, spoken to in
// JSON lines through a child process; restarted after a crash or a timeout.
#ifndef ENGRAM_CONFORMANCE_RUNNER_PEER_H_
#define ENGRAM_CONFORMANCE_RUNNER_PEER_H_

#include <chrono>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/runner/process.h"

namespace engram::conform {

// §CONF.2 item 1 What a valid handshake claims.
struct Claims {
  std::string name, version;
  std::set<std::string> suites;    // suite names, or "*"
  std::set<std::string> profiles;  // "v4.1", "demo-v1", or "*"
  std::set<std::string> features;  // §CONF.2 item 1 the hello's `features` (policies, §CONF.7)
  bool Suite(const std::string& s) const { return suites.count(s) || suites.count("*"); }
  bool Profile(const std::string& p) const { return profiles.count(p) || profiles.count("*"); }
};

// §CONF.2 item 1 Checks the answer to hello against what the runner can run:
// protocol 1, no `error`, a string `name`, `suites` and `profiles` lists of
// names these vectors have (`known_suites`) or "*". Throws engram::Error
// ("handshake failed: ...") otherwise.
Claims CheckHello(const nlohmann::ordered_json& hello, const std::set<std::string>& known_suites);

class Peer {
 public:
  Peer(std::vector<std::string> argv, std::chrono::milliseconds timeout) : argv_(std::move(argv)), timeout_(timeout) {}

  // §CONF.2 item 1: starts the child and returns its hello answer. Throws
  // engram::Error when it does not answer with a JSON object of protocol 1.
  const nlohmann::ordered_json& Hello();

  struct Reply {
    nlohmann::ordered_json body;  // the response object when ok
    std::string failure;          // timeout | crashed | garbage (empty when ok)
    std::string detail;
    bool answered = true;             // false: no answer line (a timeout, a crash, a failed restart)
    bool counts_as_timeout = false;   // a timeout or a failed restart: counted toward stopping the suite
  };
  // One request, one answer line within `timeout`. A child that crashed or
  // timed out is killed; the next call starts a fresh one (new handshake).
  Reply Call(const nlohmann::ordered_json& request, std::chrono::milliseconds timeout);
  // The same with the request already written as one line of JSON text.
  Reply CallLine(const std::string& request_line, std::chrono::milliseconds timeout);
  // §CONF.2 A bounded pipeline (the random phase): Send writes a request
  // without waiting for its answer, Receive reads the answer to the oldest
  // request in flight. The child sees the same lines in the same order as
  // with CallLine, one answer line per request; only the runner's waiting
  // differs (it judges one answer while the child computes the next).
  enum class SendStatus {
    kSent,   // in flight: Receive reads its answer
    kLater,  // not written (the window is full, no child runs, or the child stopped reading
             // with requests in flight): send it again once they are answered
    kFailed  // nothing was in flight and the child did not take it: `failure` is its reply
  };
  SendStatus Send(const std::string& request_line, std::chrono::milliseconds timeout, Reply* failure);
  // The answer to the oldest request in flight (InFlight() > 0), judged like
  // CallLine's. After a failure the child is gone and nothing is in flight.
  Reply Receive(std::chrono::milliseconds timeout);
  size_t InFlight() const { return in_flight_.size(); }
  // Stops the implementation without reading the answers in flight (a time
  // budget that ran out, §CONF.7); the next CallLine starts a fresh one.
  void Abandon() { Drop(); }
  // §CONF.2 item 5.
  void Bye();

  // At most this many requests in flight (and no more bytes than the
  // child's stdin pipe holds, so that a Send never waits).
  static constexpr size_t kMaxInFlight = 64;

 private:
  std::string Tail();
  void Start();
  // Writes the request line; a failure's reply (the child ended) or an empty `failure`.
  Reply WriteRequest(const std::string& request_line, std::chrono::milliseconds timeout);
  // The answer line, after the request was written (CallLine, Receive).
  Reply ReadAnswer(std::chrono::milliseconds timeout);
  // A failure ends the child: what was in flight is lost with it.
  void Drop();

  std::vector<std::string> argv_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<ChildProcess> process_;
  nlohmann::ordered_json hello_;
  std::deque<size_t> in_flight_;  // the byte sizes of the requests written ahead, oldest first
  size_t in_flight_bytes_ = 0;
  bool poisoned_ = false;  // a write ahead failed: the child is ended once nothing is in flight
};

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_PEER_H_
