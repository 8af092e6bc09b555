#include "conformance/runner/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace engram::conform {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A runaway child cannot make the runner hold unbounded memory.
constexpr size_t kStdoutCap = size_t{512} << 20;
// §CONF.2 Only the tail of the child's log is kept (shown on failure).
constexpr size_t kStderrKeep = 4096;
// §CONF.2 How often a wait for output checks whether the child has exited:
// a process it started outside its group (setsid) may hold its stdout open,
// so an EOF alone cannot tell.
constexpr milliseconds kExitCheck{100};

int Millis(Clock::duration d) {
  return static_cast<int>(std::clamp<int64_t>(std::chrono::duration_cast<milliseconds>(d).count(), 0, 1 << 30));
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
  pid_ = fork();
  if (pid_ < 0) throw Error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    // Its own process group: a timeout kills the whole tree (a shell peer's
    // children included), not only the process the runner started.
    setpgid(0, 0);
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
}

ChildProcess::~ChildProcess() {
  Kill();
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
                     {out_eof_ || out_buffer_.size() > kStdoutCap ? -1 : out_fd_, POLLIN, 0},
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
  while (!out_eof_ && out_buffer_.size() <= kStdoutCap) {
    const ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n > 0) {
      out_buffer_.append(buf, static_cast<size_t>(n));
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

bool ChildProcess::Exited() {
  if (reaped_ || pid_ <= 0) return true;
  const pid_t r = waitpid(pid_, &status_, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) reaped_ = true;
  return reaped_;
}

ChildProcess::ReadStatus ChildProcess::ReadLine(std::string& line, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    const size_t nl = out_buffer_.find('\n');
    if (nl != std::string::npos) {
      line = out_buffer_.substr(0, nl);
      out_buffer_.erase(0, nl + 1);
      return ReadStatus::kLine;
    }
    if (out_eof_ || out_buffer_.size() > kStdoutCap) {
      DrainStderr();
      return ReadStatus::kClosed;
    }
    // §CONF.2 A child that has exited answers nothing more, even when a
    // process it started outside its group holds the pipe open (no EOF):
    // what it wrote before it ended is read, then it is `crashed`.
    if (Exited()) {
      ReadStdout();
      DrainStderr();
      if (out_buffer_.find('\n') != std::string::npos) continue;
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
    waitpid(pid_, &status_, 0);
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

}  // namespace engram::conform
