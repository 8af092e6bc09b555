// spec/conformance.md §CONF.7 — the cases of a random run, drawn ahead of
// their use by worker threads and handed out in order.
//
// Why threads: drawing a case and computing its expectations with the
// reference is work that a run would otherwise do between two calls of the
// implementation; done ahead, on the other cores, the run's time is the
// port's. Why it changes nothing: case i is a function of (seed, suite, i)
// alone (§CONF.7 "Determinism"; the generators keep no state shared between
// threads, their layout caches are thread_local), so whichever thread builds
// it, the case is the same, and the stream hands the cases out in index order.
#ifndef ENGRAM_VECTORS_RANDOM_STREAM_H_
#define ENGRAM_VECTORS_RANDOM_STREAM_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "vectors/random_cases.h"

namespace engram::vectors {

// The threads a stream uses by default: the machine's cores, at most 8
// (at least 1).
int DefaultCaseThreads();

class CaseStream {
 public:
  // Cases 0 ... count - 1 of `suite` under `seed`. With threads <= 1 each case
  // is built when Next() asks for it; with more, `threads` workers build up to
  // `lookahead` cases ahead of the reader (a bound on the memory held).
  // `declared`: the policy features the implementation declared (DrawCase).
  // `first`: the index of the first case (a shard of a run, §CONF.9 draws
  // cases first ... first + count - 1: the same cases a whole run draws there).
  CaseStream(const RandomSuite& suite, uint64_t seed, int64_t count, int threads, int64_t lookahead = 256,
             std::set<std::string> declared = {}, int64_t first = 0);
  // Stops the workers (a reader may stop early: the first failure of a suite)
  // and waits for them.
  ~CaseStream();
  CaseStream(const CaseStream&) = delete;
  CaseStream& operator=(const CaseStream&) = delete;

  // The next case, in index order; false after the last. Throws engram::Error
  // with the generator's message when the case cannot be generated (as
  // DrawCase would).
  bool Next(RandomCase& out);

 private:
  struct Slot {
    RandomCase c;
    std::string error;  // non-empty: the case could not be generated
    int worker = -1;    // the thread that built it
  };
  void Work(int worker);

  const RandomSuite& suite_;
  const uint64_t seed_;
  const std::set<std::string> declared_;
  const int64_t count_;  // one past the index of the last case
  const int64_t lookahead_;
  int64_t next_read_ = 0;   // the index Next() hands out next
  int64_t next_claim_ = 0;  // the index a worker builds next
  bool stop_ = false;
  std::map<int64_t, Slot> done_;  // built, not yet read
  // The case a reader held before its last Next(), given back to the thread
  // that built it to be destroyed there: memory freed by the thread that
  // allocated it stays in that thread's malloc caches (one thread freeing
  // what others allocate made 2 threads slower than 1).
  std::vector<std::vector<RandomCase>> garbage_;
  int held_worker_ = -1;  // the builder of the case the reader holds now
  std::mutex mu_;
  std::condition_variable ready_;  // a case was built
  std::condition_variable room_;   // the reader moved on, or stop
  std::vector<std::thread> workers_;
};

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_RANDOM_STREAM_H_
