// A child process spoken to in JSON lines over its stdin/stdout (§CONF.2).
#ifndef ENGRAM_CONFORMANCE_RUNNER_PROCESS_H_
#define ENGRAM_CONFORMANCE_RUNNER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace engram::conform {

class ChildProcess {
 public:
  // Starts `argv` (argv[0] is looked up in PATH) with pipes for stdin,
  // stdout and stderr, in a process group of its own. Throws engram::Error
  // when it cannot be started, or once StopAllChildren has run.
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  enum class WriteStatus { kOk, kTimeout, kClosed };
  // Writes one line (a newline is appended), waiting at most `timeout` for a
  // child that does not read (a full pipe). Meanwhile what the child writes
  // to stdout is buffered and its stderr drained (§CONF.2).
  WriteStatus WriteLine(const std::string& line, std::chrono::milliseconds timeout);

  // §ERR.3 The longest answer line the runner reads: 8 MiB, about 60 times
  // the largest answer of a correct port to the committed vectors (134 KB,
  // tp_shard). A longer line is not read on (kTooLong) and the child is
  // ended, so that one answer cannot take the runner's memory.
  static constexpr size_t kMaxLineBytes = size_t{8} << 20;
  enum class ReadStatus { kLine, kTimeout, kClosed, kTooLong };
  // Reads one line, waiting at most `timeout`. kClosed also when the child
  // has exited though its stdout is still open elsewhere (§CONF.2).
  ReadStatus ReadLine(std::string& line, std::chrono::milliseconds timeout);

  // How many bytes the child's stdin pipe holds: requests written ahead
  // (Peer::Send) that fit in it never make a write wait.
  size_t InputCapacity() const { return in_capacity_; }

  // Kills the child and its process group (SIGKILL) if it still runs and reaps it.
  void Kill();
  // A description of how the child ended ("exit 3", "signal 11"), after
  // ReadLine returned kClosed; waits briefly for the exit.
  std::string ExitDescription();
  // The last few KiB the child wrote to stderr.
  std::string StderrTail();

 private:
  // Reads what is there on stdout (into out_buffer_) and stderr (into the
  // bounded err_tail_) without blocking.
  void ReadStdout();
  void DrainStderr();
  // Whether the child has ended (reaps it when it has).
  bool Exited();
  // The bytes of stdout after its last complete line (the line being read).
  size_t PartialLine() const { return out_buffer_.size() - lines_end_; }
  // §ERR.3 Whether no more of stdout is read for now: the line being read is
  // too long, or enough unread bytes wait (process.cc kBufferCap).
  bool Full() const;

  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool out_eof_ = false, err_eof_ = false;
  std::string out_buffer_;  // what the child wrote to stdout, not yet read as lines:
  size_t out_pos_ = 0;      // from here (the lines before were handed out)
  size_t lines_end_ = 0;    // up to here complete lines, then a partial one
  std::string err_tail_;
  int status_ = 0;
  bool reaped_ = false;
  size_t in_capacity_ = 4096;
  static constexpr int kPipeWish = 1 << 20;
};

// §CONF.2 The runner was told to stop (SIGTERM, SIGINT, SIGHUP: a CI cancel).
// Ends every running child's process group (SIGTERM, up to `grace` for it to
// go, then SIGKILL) and returns what happened, one line per child: what
// ended, and what survived (processes left in the group, or a process outside
// it, e.g. started with setsid, that still holds the child's stdout). No child
// can be started afterwards (the constructor throws): the caller exits.
std::string StopAllChildren(std::chrono::milliseconds grace);

// §CONF.2 Nothing the implementation started survives the run. The runner is
// made a child subreaper (PR_SET_CHILD_SUBREAPER): a process the
// implementation started outside its process group (setsid, a daemon that
// forks twice) becomes the runner's child when its parent ends, where
// EndOrphans finds it. Returns false when the kernel refuses (then only the
// process groups are ended, and survivors are reported on a signal).
bool AdoptOrphans();

// Ends every child of the runner that is not a running implementation (what
// AdoptOrphans adopted), with its process group when it leads one, and what
// they started in turn (adopted as they end): SIGTERM, up to `grace` for them
// to go, then SIGKILL, until none is left. Returns one line that says which
// processes were ended ("" when none was found). Does nothing unless
// AdoptOrphans succeeded.
std::string EndOrphans(std::chrono::milliseconds grace);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_PROCESS_H_
