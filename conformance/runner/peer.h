// spec/conformance.md §CONF.2 — the implementation under test, spoken to in
// JSON lines through a child process; restarted after a crash or a timeout.
#ifndef ENGRAM_CONFORMANCE_RUNNER_PEER_H_
#define ENGRAM_CONFORMANCE_RUNNER_PEER_H_

#include <chrono>
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
  // §CONF.2 item 5.
  void Bye();

 private:
  std::string Tail();
  void Start();

  std::vector<std::string> argv_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<ChildProcess> process_;
  nlohmann::ordered_json hello_;
};

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_PEER_H_
