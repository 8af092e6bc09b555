// spec/conformance.md §CONF.7 — the cases of a random run, drawn ahead.
#include "vectors/random_stream.h"

#include <algorithm>
#include <exception>

#include "base/error.h"

namespace engram::vectors {

int DefaultCaseThreads() {
  const unsigned n = std::thread::hardware_concurrency();  // 0 when unknown
  return static_cast<int>(std::clamp(n, 1u, 8u));
}

CaseStream::CaseStream(const RandomSuite& suite, uint64_t seed, int64_t count, int threads, int64_t lookahead,
                       std::set<std::string> declared, int64_t first)
    : suite_(suite), seed_(seed), declared_(std::move(declared)), count_(first + count), lookahead_(std::max<int64_t>(lookahead, 1)) {
  next_read_ = next_claim_ = first;
  if (threads <= 1) return;  // built on demand in Next()
  garbage_.resize(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) workers_.emplace_back([this, t] { Work(t); });
}

CaseStream::~CaseStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  room_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void CaseStream::Work(int worker) {
  std::vector<RandomCase> trash;
  for (;;) {
    trash.clear();  // the cases of this thread that the reader is done with
    // A worker takes a block of kCasesPerLayout consecutive cases: the hash
    // suites' cases of one block share a layout, which each thread caches for
    // itself (thread_local), so that a layout is built once, not once per
    // thread that meets it.
    int64_t begin, end;
    {
      std::unique_lock<std::mutex> lock(mu_);
      room_.wait(lock, [&] { return stop_ || next_claim_ >= count_ || next_claim_ < next_read_ + lookahead_; });
      trash.swap(garbage_[static_cast<size_t>(worker)]);
      if (stop_ || next_claim_ >= count_) return;
      begin = next_claim_;
      end = std::min(count_, begin + kCasesPerLayout);
      next_claim_ = end;
    }
    for (int64_t i = begin; i < end; ++i) {
      Slot slot;
      slot.worker = worker;
      try {
        slot.c = DrawCase(suite_, seed_, i, declared_);
      } catch (const std::exception& e) {  // engram::Error from a generator; anything else is one too
        slot.error = e.what();
        if (slot.error.empty()) slot.error = "unknown error";
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
        done_.emplace(i, std::move(slot));
      }
      ready_.notify_all();
    }
  }
}

bool CaseStream::Next(RandomCase& out) {
  if (next_read_ >= count_) return false;
  if (workers_.empty()) {
    out = DrawCase(suite_, seed_, next_read_++, declared_);
    return true;
  }
  Slot slot;
  {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return done_.count(next_read_) != 0; });
    auto it = done_.find(next_read_);
    slot = std::move(it->second);
    done_.erase(it);
    ++next_read_;
    if (held_worker_ >= 0) garbage_[static_cast<size_t>(held_worker_)].push_back(std::move(out));
    held_worker_ = slot.error.empty() ? slot.worker : -1;
  }
  room_.notify_all();
  if (!slot.error.empty()) throw Error(slot.error);
  out = std::move(slot.c);
  return true;
}

}  // namespace engram::vectors
