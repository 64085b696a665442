#include "shm_test_util.h"

#include <dirent.h>
#include <sys/mman.h>

#include <random>
#include <thread>

#include "core/deadline.h"
#include "transports/shm/shm_transport.h"

namespace hcl::test {

CommIdentity randomIdentity() {
  std::random_device rd;
  CommIdentity id;
  for (auto& b : id.secret) b = static_cast<uint8_t>(rd());
  id.commTag = (static_cast<uint64_t>(rd()) << 32) | rd();
  return id;
}

std::string segmentPrefix(const CommIdentity& id) {
  std::string s = "hcl-";
  for (int i = 0; i < 8; ++i) s += fmt::format("{:02x}", id.secret[i]);
  return s;
}

std::vector<std::string> segmentsInDevShm(const CommIdentity& id) {
  std::vector<std::string> found;
  const std::string prefix = segmentPrefix(id);
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return found;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0) found.push_back(name);
  }
  ::closedir(dir);
  return found;
}

void removeSegments(const CommIdentity& id) {
  for (const std::string& name : segmentsInDevShm(id)) ::shm_unlink(("/" + name).c_str());
}

Status setUpRank(int rank, int nranks, const CommIdentity& id, ProcessBarrier& barrier,
                 RankSetup& out, int64_t timeoutMs, const std::vector<PeerInfo>* peerInfo) {
  const auto barrierTimeout = std::chrono::milliseconds(timeoutMs);
  TransportContext ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  std::copy(std::begin(id.secret), std::end(id.secret), ctx.secret);
  ctx.commTag = id.commTag;
  ctx.timeoutMs = timeoutMs;
  ctx.peers = peerInfo;
  std::vector<int> peers;
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) peers.push_back(p);
  }
  out.transport = makeShmTransport();
  PeerInfo self;
  self.rank = rank;
  HCL_TRY(out.transport->listen(ctx, self));
  HCL_TRY(out.transport->prepare(ctx, peers));
  if (!barrier.wait(barrierTimeout)) return internalError("test barrier after prepare timed out");
  out.connections.resize(static_cast<size_t>(nranks));
  HCL_TRY(out.transport->connect(ctx, peers, out.connections));
  if (!barrier.wait(barrierTimeout)) return internalError("test barrier after connect timed out");
  // Each segment's name goes once its peer has mapped it, before finish():
  // a rank killed from here on leaves nothing in /dev/shm.
  if (const auto left = segmentsInDevShm(id); !left.empty()) {
    return internalError(fmt::format("{} segments still named in /dev/shm after connect, e.g. {}", left.size(),
                                     left.front()));
  }
  out.transport->finish();
  for (int p : peers) {
    if (!out.connections[p]) return internalError(fmt::format("no connection to rank {}", p));
    out.all.push_back(out.connections[p].get());
  }
  return {};
}

Status driveUntilDone(const std::vector<Connection*>& connections,
                      const std::vector<Transfer*>& transfers, std::chrono::milliseconds timeout) {
  const Deadline deadline(timeout.count());
  Backoff backoff;
  for (;;) {
    bool moved = false;
    for (Connection* c : connections) HCL_TRY(c->progress(&moved));
    bool allDone = true;
    for (const Transfer* t : transfers) allDone = allDone && t->done();
    if (allDone) return {};
    if (deadline.expired()) return internalError("test deadline passed with transfers pending");
    if (moved) {
      backoff.reset();
    } else {
      backoff.pause();
    }
  }
}

std::vector<uint8_t> pattern(int src, int dst, int index, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  uint32_t x = static_cast<uint32_t>(src * 7919 + dst * 104729 + index * 31 + 1);
  for (size_t i = 0; i < bytes; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

std::string compareBytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& expected) {
  if (got.size() != expected.size()) {
    return fmt::format("size {} != {}", got.size(), expected.size());
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i]) {
      return fmt::format("byte {} of {} is {:#x}, expected {:#x}", i, got.size(), got[i],
                         expected[i]);
    }
  }
  return {};
}

}  // namespace hcl::test
