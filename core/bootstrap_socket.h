// Socket waits for bootstrap clients: every wait is bounded by a deadline and
// polls the abort flag in short slices, so nothing blocks forever.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/deadline.h"
#include "core/status.h"

namespace hcl {

struct WaitBudget {
  Deadline deadline;
  int64_t timeoutMs;  // as given, for messages; <= 0 means no limit
  const std::atomic<bool>* abortFlag;
  std::string peer;  // "ip:port" of the root, for messages
};

// "1.2.3.4:5" or "[::1]:5".
std::string formatEndpoint(const asio::ip::address& ip, uint16_t port);

// A timeout or abort status for `what`, or success while time remains.
Status checkBudget(const WaitBudget& budget, std::string_view what);
// Waits until `fd` reports one of `events` (poll(2) flags).
Status waitFd(int fd, short events, const WaitBudget& budget, std::string_view what);
// Sleeps up to `duration`, returning early on abort or at the deadline.
Status pauseFor(std::chrono::milliseconds duration, const WaitBudget& budget, std::string_view what);

// One non-blocking connect attempt. `retryable` tells whether the failure
// (e.g. connection refused: the root is not listening yet) is worth retrying.
Status connectOnce(asio::ip::tcp::socket& socket, const asio::ip::tcp::endpoint& root,
                   const WaitBudget& budget, bool& retryable);
Status sendAll(asio::ip::tcp::socket& socket, std::span<const uint8_t> data, const WaitBudget& budget,
               std::string_view what);
// `received` counts bytes read so far, also when the call fails.
Status recvAll(asio::ip::tcp::socket& socket, std::span<uint8_t> data, const WaitBudget& budget,
               std::string_view what, size_t* received = nullptr);

}  // namespace hcl
