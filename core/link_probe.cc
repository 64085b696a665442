#include "core/link_probe.h"

#include <algorithm>
#include <chrono>

#include "core/comm_plan.h"
#include "core/executor.h"
#include "core/log.h"
#include "core/wire.h"

namespace hcl {
namespace {

constexpr int kLatencyRounds = 20;
constexpr int kBandwidthRounds = 3;
constexpr double kTargetTransferUs = 20000;  // size large transfers to take about this long
constexpr size_t kMinProbeBytes = 64 * 1024, kMaxProbeBytes = 16 * 1024 * 1024;
constexpr size_t kReplyBytes = 8;

// One round trip: `bytes` from `first` to `second`, kReplyBytes back.
Status roundTrip(const std::shared_ptr<Communicator>& comm, int peer, bool first, size_t bytes,
                 std::vector<std::byte>& buffer, double& us) {
  Schedule s;
  s.tag = static_cast<uint32_t>(CollKind::Control);
  s.algorithm = "probe";
  ScheduleBuilder b(s);
  if (first) {
    b.wait(b.send(peer, userAt(0), bytes));
    b.wait(b.recv(peer, userAt(0), kReplyBytes));
  } else {
    b.wait(b.recv(peer, userAt(0), bytes));
    b.wait(b.send(peer, userAt(0), kReplyBytes));
  }
  RunBuffers buffers;
  buffers.user.push_back(buffer.data());
  const auto start = std::chrono::steady_clock::now();
  HCL_TRY(runSingle(*comm, "HCL_PROBE", [&](RunSlot& out) {
    out.emplaceSchedule(*comm, std::move(s), std::move(buffers), ReduceSpec{});
    return Status{};
  }));
  us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return {};
}

// Best of several round trips (the least disturbed by other load).
Status bestRoundTrip(const std::shared_ptr<Communicator>& comm, int peer, bool first, size_t bytes, int rounds,
                     std::vector<std::byte>& buffer, double& best) {
  best = 0;
  for (int i = 0; i < rounds; ++i) {
    double us = 0;
    HCL_TRY(roundTrip(comm, peer, first, bytes, buffer, us));
    best = i == 0 ? us : std::min(best, us);
  }
  return {};
}

std::vector<uint8_t> encode(const std::vector<LinkModelRule>& rules) {
  WireWriter w;
  w.put<uint32_t>(static_cast<uint32_t>(rules.size()));
  for (const auto& r : rules) {
    w.putString(r.pattern);
    w.put(r.cost.alphaUs);
    w.put(r.cost.bytesPerUs);
  }
  return w.take();
}

bool decode(const std::vector<uint8_t>& blob, std::vector<LinkModelRule>& out) {
  WireReader r(blob.data(), blob.size());
  uint32_t n = 0;
  if (!r.get(n) || n > 4096) return false;
  for (uint32_t i = 0; i < n; ++i) {
    LinkModelRule rule;
    r.getString(rule.pattern);
    r.get(rule.cost.alphaUs);
    r.get(rule.cost.bytesPerUs);
    out.push_back(std::move(rule));
  }
  return r.ok() && r.atEnd();
}

}  // namespace

Status probeLinks(Oob& oob, const std::shared_ptr<Communicator>& comm, std::vector<LinkModelRule>& measured) {
  const LinkGraph graph = buildLinkGraph(comm->peers());
  const int n = graph.nranks, me = comm->rank();
  std::vector<LinkModelRule> mine;
  for (size_t c = 0; c < graph.classNames.size(); ++c) {
    int a = -1, b = -1;
    for (int i = 0; i < n && a < 0; ++i)
      for (int j = i + 1; j < n && a < 0; ++j)
        if (graph.classBetween(i, j) == static_cast<int>(c)) a = i, b = j;
    if (me == a || me == b) {
      const bool first = me == a;
      const int peer = first ? b : a;
      const size_t bytes = std::clamp(static_cast<size_t>(graph.costs[c].bytesPerUs * kTargetTransferUs),
                                      kMinProbeBytes, kMaxProbeBytes);
      std::vector<std::byte> buffer(bytes);
      double small = 0, large = 0;
      HCL_TRY(bestRoundTrip(comm, peer, first, kReplyBytes, kLatencyRounds, buffer, small));
      HCL_TRY(bestRoundTrip(comm, peer, first, bytes, kBandwidthRounds, buffer, large));
      const double alpha = small / 2;
      const LinkCost cost{alpha, static_cast<double>(bytes) / std::max(large - small, 1.0)};
      if (first) {
        mine.push_back({graph.classNames[c], cost});
        log::info(log::Tuning, "probe: class {} on ranks {}-{}: alpha {:.1f} us, beta {:.1f} MB/s ({} bytes)",
                  graph.classNames[c], a, b, cost.alphaUs, cost.bytesPerUs, bytes);
      }
    }
    HCL_TRY(oob.barrier());  // one class at a time, so probes do not disturb each other
  }
  std::vector<std::vector<uint8_t>> all;
  HCL_TRY(oob.allgather(encode(mine), all));
  for (const auto& blob : all) {
    if (!decode(blob, measured)) return internalError("malformed probe results");
  }
  return {};
}

}  // namespace hcl
