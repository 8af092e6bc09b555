#include "conformance/runner/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace engram::conform {

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  if (argv.empty()) throw Error("no command to start");
  int in[2], out[2], err[2];
  if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
  // A child that dies while we write must not kill the runner.
  signal(SIGPIPE, SIG_IGN);
  pid_ = fork();
  if (pid_ < 0) throw Error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    // Its own process group: a timeout kills the whole tree (a shell peer's
    // children included), not only the process the runner started.
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
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
  fcntl(err_fd_, F_SETFL, fcntl(err_fd_, F_GETFL) | O_NONBLOCK);
  fcntl(in_fd_, F_SETFL, fcntl(in_fd_, F_GETFL) | O_NONBLOCK);  // writes wait in poll, with a deadline
}

ChildProcess::~ChildProcess() {
  Kill();
  for (int fd : {in_fd_, out_fd_, err_fd_}) {
    if (fd >= 0) close(fd);
  }
}

ChildProcess::WriteStatus ChildProcess::WriteLine(const std::string& line, std::chrono::milliseconds timeout) {
  const std::string data = line + "\n";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
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
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return WriteStatus::kTimeout;
    pollfd fd = {in_fd_, POLLOUT, 0};
    if (poll(&fd, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return WriteStatus::kClosed;
    if (fd.revents & (POLLERR | POLLHUP)) return WriteStatus::kClosed;
  }
  return WriteStatus::kOk;
}

void ChildProcess::DrainStderr() {
  char buf[4096];
  while (true) {
    ssize_t n = read(err_fd_, buf, sizeof(buf));
    if (n <= 0) break;
    err_tail_.append(buf, static_cast<size_t>(n));
    if (err_tail_.size() > 8192) err_tail_.erase(0, err_tail_.size() - 4096);
  }
}

ChildProcess::ReadStatus ChildProcess::ReadLine(std::string& line, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const size_t nl = out_buffer_.find('\n');
    if (nl != std::string::npos) {
      line = out_buffer_.substr(0, nl);
      out_buffer_.erase(0, nl + 1);
      return ReadStatus::kLine;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return ReadStatus::kTimeout;
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    int r = poll(fds, 2, static_cast<int>(left.count()));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ReadStatus::kClosed;
    }
    if (fds[1].revents & (POLLIN | POLLHUP)) DrainStderr();
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t n = read(out_fd_, buf, sizeof(buf));
      if (n <= 0) {
        DrainStderr();
        return ReadStatus::kClosed;
      }
      out_buffer_.append(buf, static_cast<size_t>(n));
      // A runaway child cannot make the runner hold unbounded memory.
      if (out_buffer_.size() > (size_t{512} << 20)) return ReadStatus::kClosed;
    }
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
    for (int i = 0; i < 50 && !reaped_; ++i) {
      if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
      else usleep(10000);
    }
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
