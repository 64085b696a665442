// NCCL-style logging: HCL_DEBUG (NCCL_DEBUG) level, HCL_DEBUG_SUBSYS filter,
// HCL_DEBUG_FILE destination with %h (host) and %p (pid).
// Every line carries host, pid, tid, rank and subsystem.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace hcl::log {

enum class Level : int { None = 0, Version = 1, Warn = 2, Info = 3, Trace = 4 };

enum Subsys : uint32_t {
  Init = 1u << 0,
  Coll = 1u << 1,
  P2P = 1u << 2,
  Shm = 1u << 3,
  Net = 1u << 4,
  Graph = 1u << 5,
  Tuning = 1u << 6,
  Env = 1u << 7,
  Alloc = 1u << 8,
  Call = 1u << 9,
  Bootstrap = 1u << 10,
  Proxy = 1u << 11,
  Destroy = 1u << 12,
  All = ~0u,
};

namespace detail {
// The highest level a line may be written at: TRACE until the settings have
// been read, then their level. Keeps the check of a disabled level (the
// trace line of every call) inline.
extern std::atomic<int> levelCeiling;
bool enabledAfterCeiling(Level level, Subsys subsys);
}  // namespace detail

// WARN and VERSION lines ignore the subsystem filter; INFO and TRACE obey it.
inline bool enabled(Level level, Subsys subsys) {
  if (static_cast<int>(level) > detail::levelCeiling.load(std::memory_order_relaxed)) return false;
  return detail::enabledAfterCeiling(level, subsys);
}
// Writes one line unconditionally (callers check enabled() first), as
// "<host>:<pid>:<tid> [<rank>] HCL <LEVEL> <SUBSYS> <message>" with one write().
void write(Level level, Subsys subsys, std::string_view message);
// The level in effect (parsed from HCL_DEBUG on first use).
Level currentLevel();
// Re-reads HCL_DEBUG* on next use (hclResetDebugInit).
void reset();
// "HCL version x.y.z (NCCL API a.b.c)": at level VERSION the logger writes
// it once each time it reads its settings; at INFO the first init logs it.
std::string versionText();
// The rank shown in log lines written by this thread (-1: none).
void setThreadRank(int rank);

template <typename... Args>
void warn(Subsys s, fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::Warn, s)) write(Level::Warn, s, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(Subsys s, fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::Info, s)) write(Level::Info, s, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void trace(Subsys s, fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::Trace, s)) write(Level::Trace, s, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace hcl::log
