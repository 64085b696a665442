#include "core/log.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "core/api_wording.h"
#include "core/params.h"
#include "hcl.h"

namespace hcl::log {
namespace {

struct SubsysName {
  Subsys bit;
  std::string_view name;
};

constexpr std::array kSubsysNames = {
    SubsysName{Init, "INIT"},     SubsysName{Coll, "COLL"},         SubsysName{P2P, "P2P"},
    SubsysName{Shm, "SHM"},       SubsysName{Net, "NET"},           SubsysName{Graph, "GRAPH"},
    SubsysName{Tuning, "TUNING"}, SubsysName{Env, "ENV"},           SubsysName{Alloc, "ALLOC"},
    SubsysName{Call, "CALL"},     SubsysName{Bootstrap, "BOOTSTRAP"}, SubsysName{Proxy, "PROXY"},
    SubsysName{Destroy, "DESTROY"},
};

bool equalsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto up = [](char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; };
    if (up(a[i]) != up(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const char* levelName(Level level) {
  switch (level) {
    case Level::None: return "NONE";
    case Level::Version: return "VERSION";
    case Level::Warn: return "WARN";
    case Level::Info: return "INFO";
    case Level::Trace: return "TRACE";
  }
  return "?";
}

Level parseLevel(std::string_view text, std::vector<std::string>& notes) {
  text = trim(text);
  if (text.empty()) return Level::Warn;
  for (Level l : {Level::None, Level::Version, Level::Warn, Level::Info, Level::Trace})
    if (equalsNoCase(text, levelName(l))) return l;
  notes.push_back(fmt::format("Unknown HCL_DEBUG level '{}', using WARN", text));
  return Level::Warn;
}

uint32_t parseSubsysMask(std::string_view text, std::vector<std::string>& notes) {
  text = trim(text);
  const bool invert = !text.empty() && text.front() == '^';
  if (invert) text.remove_prefix(1);
  uint32_t mask = 0;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    if (equalsNoCase(item, "ALL")) {
      mask = All;
      continue;
    }
    bool known = false;
    for (const auto& s : kSubsysNames) {
      if (equalsNoCase(item, s.name)) {
        mask |= s.bit;
        known = true;
      }
    }
    if (!known) notes.push_back(fmt::format("Unknown subsystem '{}' in HCL_DEBUG_SUBSYS", item));
  }
  return invert ? ~mask : mask;
}

std::string subsysName(Subsys subsys) {
  if (subsys == All) return "ALL";
  std::string name;
  for (const auto& s : kSubsysNames) {
    if ((subsys & s.bit) == 0) continue;
    if (!name.empty()) name += '|';
    name += s.name;
  }
  return name.empty() ? "-" : name;
}

std::string expandPath(std::string_view pattern, std::string_view host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[i + 1];
      if (c == 'h') { out += host; ++i; continue; }
      if (c == 'p') { out += std::to_string(::getpid()); ++i; continue; }
      if (c == '%') { out += '%'; ++i; continue; }
    }
    out += pattern[i];
  }
  return out;
}

void writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to report a failing log sink
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void lockLogBeforeFork();
void unlockLogAfterFork();

// The process-wide logger. Trivially destructible on purpose: lines logged
// from static destructors of other objects must still find it intact; the OS
// closes the log file at exit.
class Logger {
 public:
  constexpr Logger() = default;

  bool enabled(Level level, Subsys subsys) {
    if (level == Level::None) return false;
    ensureInit();
    if (static_cast<int>(level) > level_.load(std::memory_order_relaxed)) return false;
    if (level <= Level::Warn) return true;
    return (mask_.load(std::memory_order_relaxed) & subsys) != 0;
  }

  Level level() {
    ensureInit();
    return static_cast<Level>(level_.load(std::memory_order_relaxed));
  }

  void write(Level level, Subsys subsys, std::string_view message) {
    ensureInit();
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r'))
      message.remove_suffix(1);
    fmt::memory_buffer line;
    auto out = std::back_inserter(line);
    fmt::format_to(out, "{}:{}:{} ", host_, ::getpid(), ::gettid());
    if (threadRank_ >= 0) fmt::format_to(out, "[{}] ", threadRank_);
    fmt::format_to(out, "HCL {} {} {}\n", levelName(level), subsysName(subsys), apiWording(message));
    std::lock_guard lock(mutex_);  // keeps fd_ open while reset() may run
    writeAll(fd_, line.data(), line.size());
  }

  void reset() {
    std::lock_guard lock(mutex_);
    closeFileLocked();
    detail::levelCeiling.store(static_cast<int>(Level::Trace), std::memory_order_relaxed);
    ready_.store(false, std::memory_order_release);
  }

  static void setThreadRank(int rank) { threadRank_ = rank; }
  void lockForFork() { mutex_.lock(); }
  void unlockAfterFork() { mutex_.unlock(); }

 private:
  void ensureInit() {
    if (ready_.load(std::memory_order_acquire)) return;
    std::vector<std::string> notes;
    {
      std::lock_guard lock(mutex_);
      if (ready_.load(std::memory_order_relaxed)) return;
      initLocked(notes);
      ready_.store(true, std::memory_order_release);
      detail::levelCeiling.store(level_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
    for (const auto& note : notes) write(Level::Warn, Env, note);
    if (level_.load(std::memory_order_relaxed) == static_cast<int>(Level::Version)) {
      write(Level::Version, Init, versionText());
    }
  }

  void initLocked(std::vector<std::string>& notes) {
    std::call_once(hostOnce_, [this] {
      if (::gethostname(host_, sizeof host_ - 1) != 0) std::strcpy(host_, "unknown");
      host_[std::strcspn(host_, ".")] = '\0';  // short name, like NCCL
      // A child forked while another thread writes a line must not inherit
      // the lock held: forks wait for the line to be written.
      ::pthread_atfork(lockLogBeforeFork, unlockLogAfterFork, unlockLogAfterFork);
    });
    level_.store(static_cast<int>(parseLevel(paramString("HCL_DEBUG"), notes)),
                 std::memory_order_relaxed);
    mask_.store(parseSubsysMask(paramString("HCL_DEBUG_SUBSYS"), notes), std::memory_order_relaxed);
    if (level_.load(std::memory_order_relaxed) >= static_cast<int>(Level::Warn)) {
      for (std::string& problem : configFileProblems()) notes.push_back(std::move(problem));
      for (std::string& problem : environmentProblems()) notes.push_back(std::move(problem));
    }

    closeFileLocked();
    const std::string pattern = paramString("HCL_DEBUG_FILE");
    if (pattern.empty()) return;
    const std::string path = expandPath(pattern, host_);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      notes.push_back(fmt::format("Cannot open HCL_DEBUG_FILE '{}': {}; logging to stderr", path,
                                  std::strerror(errno)));
      return;
    }
    fd_ = fd;
  }

  void closeFileLocked() {
    if (fd_ != STDERR_FILENO) ::close(fd_);
    fd_ = STDERR_FILENO;
  }

  std::mutex mutex_;
  std::atomic<bool> ready_{false};
  std::atomic<int> level_{static_cast<int>(Level::Warn)};
  std::atomic<uint32_t> mask_{0};
  int fd_ = STDERR_FILENO;  // guarded by mutex_
  std::once_flag hostOnce_;
  char host_[HOST_NAME_MAX + 1] = {};  // written once, before ready_ is first set
  static thread_local int threadRank_;
};

thread_local int Logger::threadRank_ = -1;

constinit Logger gLogger;

void lockLogBeforeFork() { gLogger.lockForFork(); }
void unlockLogAfterFork() { gLogger.unlockAfterFork(); }

}  // namespace

std::string versionText() {
  return fmt::format("HCL version {}.{}.{} (NCCL API {}.{}.{})", HCL_MAJOR, HCL_MINOR, HCL_PATCH,
                     HCL_NCCL_VERSION_CODE / 10000, (HCL_NCCL_VERSION_CODE / 100) % 100,
                     HCL_NCCL_VERSION_CODE % 100);
}

namespace detail {
constinit std::atomic<int> levelCeiling{static_cast<int>(Level::Trace)};
bool enabledAfterCeiling(Level level, Subsys subsys) { return gLogger.enabled(level, subsys); }
}  // namespace detail
void write(Level level, Subsys subsys, std::string_view message) { gLogger.write(level, subsys, message); }
Level currentLevel() { return gLogger.level(); }
void reset() { gLogger.reset(); }
void setThreadRank(int rank) { Logger::setThreadRank(rank); }

}  // namespace hcl::log
