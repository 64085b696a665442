#include "core/bootstrap_socket.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "core/socket_fd.h"

namespace hcl {
namespace {

// How often a wait looks at the abort flag.
constexpr std::chrono::milliseconds kAbortSlice{20};
constexpr std::chrono::milliseconds kIdleSlice{1000};

std::chrono::milliseconds nextSlice(const WaitBudget& budget) {
  auto slice = budget.abortFlag != nullptr ? kAbortSlice : kIdleSlice;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(budget.deadline.end() - Clock::now());
  return std::clamp(left, std::chrono::milliseconds(0), slice);
}

Status socketError(const WaitBudget& budget, std::string_view what, const std::error_code& ec) {
  return systemError(fmt::format("bootstrap: {} (root {}) failed: {}", what, budget.peer, ec.message()));
}

}  // namespace

std::string formatEndpoint(const asio::ip::address& ip, uint16_t port) {
  if (ip.is_v6()) return fmt::format("[{}]:{}", ip.to_string(), port);
  return fmt::format("{}:{}", ip.to_string(), port);
}

Status checkBudget(const WaitBudget& budget, std::string_view what) {
  if (budget.abortFlag != nullptr && budget.abortFlag->load(std::memory_order_acquire))
    return internalError(fmt::format("bootstrap aborted (abort flag set) while {} (root {})", what, budget.peer));
  if (budget.deadline.expired())
    return remoteError(fmt::format("bootstrap timed out after {} ms while {} (root {})", budget.timeoutMs, what,
                                   budget.peer));
  return Status::success();
}

Status waitFd(int fd, short events, const WaitBudget& budget, std::string_view what) {
  while (true) {
    HCL_TRY(checkBudget(budget, what));
    pollfd pfd{fd, events, 0};
    const int n = ::poll(&pfd, 1, static_cast<int>(nextSlice(budget).count()));
    if (n > 0) return Status::success();  // errors and hang-ups surface in the following I/O call
    if (n < 0 && errno != EINTR)
      return systemError(fmt::format("bootstrap: poll while {} (root {}) failed: {}", what, budget.peer,
                                     std::strerror(errno)));
  }
}

Status pauseFor(std::chrono::milliseconds duration, const WaitBudget& budget, std::string_view what) {
  const auto end = Clock::now() + duration;
  while (Clock::now() < end) {
    HCL_TRY(checkBudget(budget, what));
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(end - Clock::now());
    std::this_thread::sleep_for(std::min(left, nextSlice(budget)));
  }
  return Status::success();
}

Status connectOnce(asio::ip::tcp::socket& socket, const asio::ip::tcp::endpoint& root, const WaitBudget& budget,
                   bool& retryable) {
  retryable = false;
  std::error_code ec;
  if (socket.is_open()) socket.close(ec);
  openCloseOnExec(socket, root.protocol(), ec);
  if (!ec) socket.non_blocking(true, ec);
  if (!ec) socket.set_option(asio::ip::tcp::no_delay(true), ec);
  if (ec) return socketError(budget, "opening a socket", ec);

  // asio's synchronous connect would block without limit; connect by hand.
  int rc = ::connect(socket.native_handle(), root.data(), static_cast<socklen_t>(root.size()));
  int err = rc == 0 ? 0 : errno;
  if (err == EINPROGRESS || err == EINTR) {
    HCL_TRY(waitFd(socket.native_handle(), POLLOUT, budget, "connecting"));
    socklen_t len = sizeof(err);
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err == EINPROGRESS) {  // poll woke for another reason; treat as a retryable miss
      retryable = true;
      return systemError(fmt::format("bootstrap: connecting to root {} did not complete", budget.peer));
    }
  }
  if (err == 0) {
    // Retrying a port nobody listens on yet (a root that rank 0 is about to
    // start) can end connected to itself, and then holds the root's port.
    if (isConnectedToItself(socket)) {
      socket.close(ec);
      retryable = true;
      return systemError(fmt::format("bootstrap: connecting to root {} ended connected to itself", budget.peer));
    }
    return Status::success();
  }
  retryable = err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == ECONNABORTED ||
              err == EAGAIN;
  return socketError(budget, "connecting", std::error_code(err, std::system_category()));
}

Status sendAll(asio::ip::tcp::socket& socket, std::span<const uint8_t> data, const WaitBudget& budget,
               std::string_view what) {
  size_t sent = 0;
  while (sent < data.size()) {
    std::error_code ec;
    sent += socket.write_some(asio::buffer(data.data() + sent, data.size() - sent), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      HCL_TRY(waitFd(socket.native_handle(), POLLOUT, budget, what));
    } else if (ec && ec != asio::error::interrupted) {
      return socketError(budget, what, ec);
    }
  }
  return Status::success();
}

Status recvAll(asio::ip::tcp::socket& socket, std::span<uint8_t> data, const WaitBudget& budget,
               std::string_view what, size_t* received) {
  size_t got = 0;
  auto report = [&] {
    if (received != nullptr) *received = got;
  };
  while (got < data.size()) {
    std::error_code ec;
    got += socket.read_some(asio::buffer(data.data() + got, data.size() - got), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      Status st = waitFd(socket.native_handle(), POLLIN, budget, what);
      if (!st.ok()) {
        report();
        return st;
      }
    } else if (ec == asio::error::eof) {
      report();
      return systemError(fmt::format("bootstrap: root {} closed the connection while {}", budget.peer, what));
    } else if (ec && ec != asio::error::interrupted) {
      report();
      return socketError(budget, what, ec);
    }
  }
  report();
  return Status::success();
}

}  // namespace hcl
