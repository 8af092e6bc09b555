#include "conformance/runner/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "base/error.h"

namespace engram::conform {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A runaway child cannot make the runner hold unbounded memory (§ERR.3): the
// line being read is cut at kStdoutCap, and what the child wrote ahead of the
// runner (answers not asked for yet, a flood) is read up to kBufferCap, then
// left in the pipe until the runner has taken lines (the child then blocks).
constexpr size_t kStdoutCap = ChildProcess::kMaxLineBytes;
constexpr size_t kBufferCap = 2 * ChildProcess::kMaxLineBytes;
// §CONF.2 Only the tail of the child's log is kept (shown on failure).
constexpr size_t kStderrKeep = 4096;
// §CONF.2 How often a wait for output checks whether the child has exited:
// a process it started outside its group (setsid) may hold its stdout open,
// so an EOF alone cannot tell.
constexpr milliseconds kExitCheck{100};

int Millis(Clock::duration d) {
  return static_cast<int>(std::clamp<int64_t>(std::chrono::duration_cast<milliseconds>(d).count(), 0, 1 << 30));
}

// §CONF.2 The children that run, by pid (= their process group), with their
// stdout and stderr pipes: what StopAllChildren ends and checks. Children
// are forked under the lock, so that none starts once the run is stopping.
struct Registry {
  std::mutex mutex;
  std::map<pid_t, std::pair<int, int>> live;  // pid -> (stdout fd, stderr fd)
  bool stopping = false;
  bool adopting = false;  // AdoptOrphans succeeded: the runner's other children are left-behind processes
};
Registry& Children() {
  static Registry* r = new Registry;  // never destroyed: a signal may come during exit
  return *r;
}

// In the child after fork: `fd` becomes `target` without close-on-exec.
void MoveTo(int fd, int target) {
  if (fd == target) {
    fcntl(fd, F_SETFD, 0);
  } else {
    dup2(fd, target);  // dup2 clears close-on-exec on the copy
  }
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  if (argv.empty()) throw Error("no command to start");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Close-on-exec: a child must not inherit the pipes of another child (an
  // earlier one still being killed), which would hold them open.
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    throw Error(std::string("pipe: ") + std::strerror(errno));
  }
  // A child that dies while we write must not kill the runner.
  signal(SIGPIPE, SIG_IGN);
  Registry& registry = Children();
  std::lock_guard<std::mutex> lock(registry.mutex);
  if (registry.stopping) {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    throw Error("the run is being stopped");
  }
  pid_ = fork();
  if (pid_ < 0) throw Error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    // Its own process group: a timeout kills the whole tree (a shell peer's
    // children included), not only the process the runner started.
    setpgid(0, 0);
    // The runner blocks SIGTERM / SIGINT / SIGHUP for its signal thread
    // (§CONF.2); the implementation must receive them as usual.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    MoveTo(in[0], 0);
    MoveTo(out[1], 1);
    MoveTo(err[1], 2);
    execvp(args[0], args.data());
    const std::string msg = "cannot start " + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!write(2, msg.data(), msg.size());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  in_fd_ = in[1];
  out_fd_ = out[0];
  err_fd_ = err[0];
  setpgid(pid_, pid_);  // also here: whichever of parent and child runs first
  // Nothing blocks: writes and reads wait in poll, with a deadline.
  for (int fd : {in_fd_, out_fd_, err_fd_}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  // Room for the requests the runner writes ahead (Peer::Send) and for the
  // answers the child writes meanwhile: a larger pipe when the system lets
  // (fs.pipe-max-size), else the default 64 KiB; what it is is asked back.
  for (int fd : {in_fd_, out_fd_}) (void)fcntl(fd, F_SETPIPE_SZ, kPipeWish);
  const int capacity = fcntl(in_fd_, F_GETPIPE_SZ);
  in_capacity_ = capacity > 0 ? static_cast<size_t>(capacity) : 4096;
  registry.live[pid_] = {out_fd_, err_fd_};
}

ChildProcess::~ChildProcess() {
  Kill();
  {
    Registry& registry = Children();
    std::lock_guard<std::mutex> lock(registry.mutex);
    registry.live.erase(pid_);
  }
  for (int fd : {in_fd_, out_fd_, err_fd_}) {
    if (fd >= 0) close(fd);
  }
}

ChildProcess::WriteStatus ChildProcess::WriteLine(const std::string& line, std::chrono::milliseconds timeout) {
  const std::string data = line + "\n";
  const auto deadline = Clock::now() + timeout;
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(in_fd_, data.data() + done, data.size() - done);
    if (n >= 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return WriteStatus::kClosed;
    // The pipe is full: a child that does not read its input is a timeout, not a hang.
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return WriteStatus::kTimeout;
    // §CONF.2 Meanwhile the child's output is read: a child blocked writing
    // its log (a full stderr pipe) or an early answer does not read its
    // input, and the two would wait for each other until the timeout.
    pollfd fds[3] = {{in_fd_, POLLOUT, 0},
                     {out_eof_ || Full() ? -1 : out_fd_, POLLIN, 0},
                     {err_eof_ ? -1 : err_fd_, POLLIN, 0}};
    if (poll(fds, 3, std::min(Millis(left), static_cast<int>(kExitCheck.count()))) < 0 && errno != EINTR) {
      return WriteStatus::kClosed;
    }
    if (fds[1].revents != 0) ReadStdout();
    if (fds[2].revents != 0) DrainStderr();
    if (fds[0].revents & (POLLERR | POLLHUP)) return WriteStatus::kClosed;
    // Its stdin may be held open by a process that escaped its group.
    if (fds[0].revents == 0 && Exited()) return WriteStatus::kClosed;
  }
  return WriteStatus::kOk;
}

void ChildProcess::ReadStdout() {
  char buf[65536];
  // §ERR.3 The lines already handed out are dropped before more is read
  // (once they are half the buffer: amortised, each byte moves once), so that
  // a child writing without pause cannot grow the buffer by them.
  if (out_pos_ > 0 && out_pos_ >= out_buffer_.size() / 2) {
    out_buffer_.erase(0, out_pos_);
    lines_end_ -= out_pos_;
    out_pos_ = 0;
  }
  // Then at most kBufferCap bytes wait unread (complete answers ahead and the
  // line being read): the rest stays in the pipe.
  while (!out_eof_ && !Full()) {
    const ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n > 0) {
      out_buffer_.append(buf, static_cast<size_t>(n));
      if (const void* nl = memrchr(buf, '\n', static_cast<size_t>(n))) {
        lines_end_ = out_buffer_.size() - static_cast<size_t>(n) + static_cast<size_t>(static_cast<const char*>(nl) - buf) + 1;
      }
    } else if (n == 0) {
      out_eof_ = true;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;  // nothing more for now
    } else if (errno != EINTR) {
      out_eof_ = true;  // a pipe that fails reads as closed
    }
  }
}

void ChildProcess::DrainStderr() {
  char buf[4096];
  while (!err_eof_) {
    const ssize_t n = read(err_fd_, buf, sizeof(buf));
    if (n > 0) {
      err_tail_.append(buf, static_cast<size_t>(n));
      if (err_tail_.size() > 2 * kStderrKeep) err_tail_.erase(0, err_tail_.size() - kStderrKeep);
    } else if (n == 0) {
      err_eof_ = true;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;
    } else if (errno != EINTR) {
      err_eof_ = true;
    }
  }
}

bool ChildProcess::Full() const {
  return PartialLine() > kStdoutCap || out_buffer_.size() - out_pos_ > kBufferCap;
}

bool ChildProcess::Exited() {
  if (reaped_ || pid_ <= 0) return true;
  const pid_t r = waitpid(pid_, &status_, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) reaped_ = true;
  return reaped_;
}

ChildProcess::ReadStatus ChildProcess::ReadLine(std::string& line, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (out_pos_ < lines_end_) {
      const size_t nl = out_buffer_.find('\n', out_pos_);
      line.assign(out_buffer_, out_pos_, nl - out_pos_);
      out_pos_ = nl + 1;
      if (out_pos_ == lines_end_) {  // every complete line read: drop them at once, not one by one
        out_buffer_.erase(0, out_pos_);
        lines_end_ = out_pos_ = 0;
      }
      return ReadStatus::kLine;
    }
    if (PartialLine() > kStdoutCap) {
      DrainStderr();
      return ReadStatus::kTooLong;
    }
    if (out_eof_) {
      DrainStderr();
      return ReadStatus::kClosed;
    }
    // §CONF.2 A child that has exited answers nothing more, even when a
    // process it started outside its group holds the pipe open (no EOF):
    // what it wrote before it ended is read, then it is `crashed`.
    if (Exited()) {
      ReadStdout();
      DrainStderr();
      if (out_pos_ < lines_end_) continue;
      return ReadStatus::kClosed;
    }
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return ReadStatus::kTimeout;
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_eof_ ? -1 : err_fd_, POLLIN, 0}};
    if (poll(fds, 2, std::min(Millis(left), static_cast<int>(kExitCheck.count()))) < 0) {
      if (errno == EINTR) continue;
      return ReadStatus::kClosed;
    }
    if (fds[1].revents != 0) DrainStderr();
    if (fds[0].revents != 0) ReadStdout();
  }
}

void ChildProcess::Kill() {
  // The process group (see the constructor), also when the child itself has
  // exited already: what it started (a shell peer's `sleep`) must not linger.
  if (pid_ > 0) kill(-pid_, SIGKILL);
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    if (waitpid(pid_, &status_, 0) != pid_) status_ = 0;  // ECHILD: reaped by StopAllChildren
    reaped_ = true;
  }
}

std::string ChildProcess::ExitDescription() {
  if (!reaped_ && pid_ > 0) {
    for (int i = 0; i < 50 && !Exited(); ++i) usleep(10000);
    if (!reaped_) return "closed its output but still runs";
  }
  if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_)) + " (" + strsignal(WTERMSIG(status_)) + ")";
  if (WIFEXITED(status_)) return "exited with status " + std::to_string(WEXITSTATUS(status_));
  return "ended";
}

std::string ChildProcess::StderrTail() {
  DrainStderr();
  return err_tail_.size() > 2000 ? err_tail_.substr(err_tail_.size() - 2000) : err_tail_;
}

namespace {

// Whether process group `pgid` still has a process (its leader, our child,
// is reaped if it is a zombie, which would otherwise count).
bool GroupAlive(pid_t pgid) {
  int status = 0;
  // Every ended member that is the runner's child (the leader, and what the
  // runner adopted, AdoptOrphans) is reaped: a zombie would count as alive.
  while (waitpid(-pgid, &status, WNOHANG) > 0) {
  }
  return kill(-pgid, 0) == 0;
}

// Waits up to `limit` for every group in `groups` to be empty; returns those still alive.
std::vector<pid_t> WaitGroups(const std::vector<pid_t>& groups, milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  std::vector<pid_t> alive = groups;
  while (true) {
    std::erase_if(alive, [](pid_t g) { return !GroupAlive(g); });
    if (alive.empty() || Clock::now() >= deadline) return alive;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

// The processes (other than the runner) that hold an end of the pipe `fd`
// (found through /proc/*/fd); "" when the pipe has no other end open.
std::string PipeHolders(int fd) {
  pollfd p = {fd, POLLIN, 0};
  if (poll(&p, 1, 0) >= 0 && (p.revents & POLLHUP)) return "";  // every writer is gone
  struct stat st{};
  if (fstat(fd, &st) != 0) return "";
  const std::string link = "pipe:[" + std::to_string(st.st_ino) + "]";
  std::string out;
  std::error_code ec;
  const std::string self = std::to_string(getpid());
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid == self) continue;
    std::error_code ec2;
    for (const auto& f : std::filesystem::directory_iterator(proc.path() / "fd", ec2)) {
      std::error_code ec3;
      if (std::filesystem::read_symlink(f.path(), ec3).string() == link) {
        out += (out.empty() ? "" : ", ") + std::string("process ") + pid + " ";
        break;
      }
    }
  }
  return out.empty() ? "a process (not found in /proc) " : out;
}

// /proc/<pid>/stat, or "" when the process is gone: a process that exits
// between the directory listing and the read makes read() fail with ESRCH,
// which std::ifstream turns into an exception (it ended a run with abort).
std::string ProcStat(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[4096];  // the line is a few hundred bytes: the command name is at most 16
  const ssize_t n = ::read(fd, buf, sizeof(buf));
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// A child of the runner that is not a running implementation.
struct AdoptedProcess {
  pid_t pid = 0, group = 0;
  bool zombie = false;
};

// The runner's children that are not a running implementation, from
// /proc/<pid>/stat (field 3 is the state, 4 the parent, 5 the group).
std::vector<AdoptedProcess> Adopted(const std::set<pid_t>& live) {
  std::vector<AdoptedProcess> out;
  const pid_t self = getpid();
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = proc.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = ProcStat(proc.path() / "stat");
    const size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (!(fields >> state >> ppid >> pgrp)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (ppid == self && live.count(pid) == 0) out.push_back({pid, static_cast<pid_t>(pgrp), state == 'Z'});
  }
  return out;
}

std::string EndAdopted(const std::set<pid_t>& live, std::chrono::milliseconds grace) {
  std::set<pid_t> ended;
  int signo = SIGTERM;
  const auto term_until = Clock::now() + grace;
  const auto give_up = term_until + milliseconds(5000);
  while (Clock::now() < give_up) {
    std::vector<AdoptedProcess> adopted = Adopted(live);
    // An adopted process that has ended is only reaped (by its pid: a running
    // implementation's exit is its ChildProcess's to see).
    std::erase_if(adopted, [](const AdoptedProcess& a) {
      int status = 0;
      return a.zombie && waitpid(a.pid, &status, WNOHANG) == a.pid;
    });
    if (adopted.empty()) break;
    if (Clock::now() >= term_until) signo = SIGKILL;
    for (const AdoptedProcess& a : adopted) {
      if (ended.insert(a.pid).second || signo == SIGKILL) {
        // Its own group (setsid, setpgid) goes with it; never the runner's.
        if (a.group == a.pid && a.group != getpgrp()) kill(-a.group, signo);
        kill(a.pid, signo);
      }
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  if (ended.empty()) return "";
  std::string pids;
  for (pid_t p : ended) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
  return "the implementation left " + std::to_string(ended.size()) + " process(es) running outside its process group (" +
         pids + "): ended";
}

}  // namespace

std::string StopAllChildren(std::chrono::milliseconds grace) {
  Registry& registry = Children();
  std::lock_guard<std::mutex> lock(registry.mutex);  // held: no child starts from now on
  registry.stopping = true;
  if (registry.live.empty()) return "no implementation was running\n";
  std::vector<pid_t> groups;
  for (const auto& [pid, fds] : registry.live) {
    groups.push_back(pid);
    kill(-pid, SIGTERM);
  }
  const std::vector<pid_t> stubborn = WaitGroups(groups, grace);
  for (pid_t g : stubborn) kill(-g, SIGKILL);
  const std::vector<pid_t> survivors = WaitGroups(stubborn, milliseconds(1000));
  std::string report;
  // What left the groups and was adopted (AdoptOrphans) is ended too.
  if (registry.adopting) {
    std::set<pid_t> live;
    for (const auto& [pid, fds] : registry.live) live.insert(pid);
    if (const std::string ended = EndAdopted(live, grace); !ended.empty()) report += ended + "\n";
  }
  for (const auto& [pid, fds] : registry.live) {
    const std::string group = "process group " + std::to_string(pid);
    if (std::count(survivors.begin(), survivors.end(), pid)) {
      report += group + ": still has processes after SIGKILL\n";
    } else if (std::count(stubborn.begin(), stubborn.end(), pid)) {
      report += group + ": SIGTERM sent, still running after " + std::to_string(grace.count()) + " ms; SIGKILL ended it\n";
    } else {
      report += group + ": SIGTERM sent; it ended\n";
    }
    // What left the group (setsid, a daemon) is out of its reach: said, not hidden.
    for (const auto& [fd, what] : {std::pair{fds.first, "stdout"}, std::pair{fds.second, "stderr"}}) {
      if (const std::string holders = PipeHolders(fd); !holders.empty()) {
        report += "  survived: " + holders + "still holds the implementation's " + what +
                  " open (it left the process group, e.g. with setsid)\n";
      }
    }
  }
  return report;
}

bool AdoptOrphans() {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return false;
  Registry& registry = Children();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.adopting = true;
  return true;
}

std::string EndOrphans(std::chrono::milliseconds grace) {
  Registry& registry = Children();
  std::set<pid_t> live;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    if (!registry.adopting) return "";
    for (const auto& [pid, fds] : registry.live) live.insert(pid);
  }
  return EndAdopted(live, grace);
}

}  // namespace engram::conform
