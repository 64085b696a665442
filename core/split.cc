#include "core/split.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "collectives/algorithms/p2p.h"
#include "collectives/algorithms/ring.h"
#include "core/bootstrap.h"
#include "core/comm_init.h"
#include "core/executor.h"

namespace hcl {
namespace {

Status runOne(Communicator& parent, const char* call, Schedule schedule, RunBuffers buffers) {
  return runSingle(parent, call, [&](RunSlot& out) {
    out.emplaceSchedule(parent, std::move(schedule), std::move(buffers), ReduceSpec{});
    return Status{};
  });
}

// Out-of-band collectives among a subset of the parent's ranks, over the
// parent's links. Other colors run their own exchanges at the same time on
// disjoint pairs, so messages never cross.
class SubsetOob final : public Oob {
 public:
  SubsetOob(const char* call, std::shared_ptr<Communicator> parent, std::vector<int> members, int myIndex)
      : call_(call), parent_(std::move(parent)), members_(std::move(members)), me_(myIndex) {}
  int rank() const override { return me_; }
  int size() const override { return static_cast<int>(members_.size()); }

  Status allgather(const std::vector<uint8_t>& mine, std::vector<std::vector<uint8_t>>& all) override {
    const size_t m = members_.size();
    std::vector<uint64_t> sizes(m, 0);
    sizes[static_cast<size_t>(me_)] = mine.size();
    HCL_TRY(exchange([&](size_t i) { return static_cast<void*>(&sizes[i]); },
                     [&](size_t) { return sizeof(uint64_t); }));
    all.assign(m, {});
    for (size_t i = 0; i < m; ++i) all[i].resize(sizes[i]);
    all[static_cast<size_t>(me_)] = mine;
    return exchange([&](size_t i) { return static_cast<void*>(all[i].data()); },
                    [&](size_t i) { return static_cast<size_t>(sizes[i]); });
  }

 private:
  // Sends slot me_ to every member and receives slot i from member i.
  template <typename BufferOf, typename BytesOf>
  Status exchange(BufferOf bufferOf, BytesOf bytesOf) {
    std::vector<P2PCall> calls;
    RunBuffers buffers;
    for (size_t i = 0; i < members_.size(); ++i) {
      if (static_cast<int>(i) == me_) continue;
      buffers.user.push_back(bufferOf(static_cast<size_t>(me_)));
      calls.push_back({true, members_[i], bytesOf(static_cast<size_t>(me_)), static_cast<uint32_t>(buffers.user.size() - 1)});
      buffers.user.push_back(bufferOf(i));
      calls.push_back({false, members_[i], bytesOf(i), static_cast<uint32_t>(buffers.user.size() - 1)});
    }
    Schedule schedule;
    std::string error;
    if (!p2pSchedule(calls, parent_->rank(), schedule, error)) return internalError(error);
    schedule.tag = static_cast<uint32_t>(CollKind::Control);
    return runOne(*parent_, call_, std::move(schedule), std::move(buffers));
  }

  const char* call_;
  std::shared_ptr<Communicator> parent_;
  std::vector<int> members_;
  int me_;
};

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

// Every rank tells its color and key over the parent's links; the members
// of each color then build their communicator over those links too.
Status splitOverLinks(const std::shared_ptr<Communicator>& parent, int color, int key, const CommSettings& settings,
                      std::shared_ptr<Communicator>& out) {
  const int n = parent->nranks();
  const uint64_t serial = parent->nextSplitSerial();
  std::vector<int32_t> table(static_cast<size_t>(2 * n), 0);
  const int32_t mine[2] = {color, key};
  CollArgs args;
  args.kind = CollKind::Control;
  args.rank = parent->rank();
  args.nranks = n;
  args.count = 2;
  args.type = hclInt32;
  args.chunkBytes = parent->settings().chunkBytes;
  HCL_TRY(runOne(*parent, "hclCommSplit", ringAllGather(args), RunBuffers{mine, table.data(), {}}));
  if (color == HCL_SPLIT_NOCOLOR) return {};

  std::vector<int> members;
  for (int r = 0; r < n; ++r) {
    if (table[static_cast<size_t>(2 * r)] == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return table[static_cast<size_t>(2 * a + 1)] < table[static_cast<size_t>(2 * b + 1)];
  });
  const int myIndex = static_cast<int>(std::find(members.begin(), members.end(), parent->rank()) - members.begin());
  SubsetOob oob("hclCommSplit", parent, members, myIndex);
  const uint64_t tag = mix(mix(parent->commTag(), serial), static_cast<uint32_t>(color));
  return initCommunicator(oob, static_cast<int>(members.size()), myIndex, parent->secret(), tag, settings, nullptr,
                          out);
}

// Secret of the communicator the survivors build at the rescue root: the
// parent's, mixed with the member list, so a stranger or a rank with another
// list cannot join it.
void rescueSecret(const uint8_t parentSecret[16], const std::vector<int>& members, uint8_t out[16]) {
  uint64_t halves[2];
  std::memcpy(halves, parentSecret, sizeof halves);
  for (uint64_t& h : halves) {
    h = mix(h, 0x52455343ull);  // "RESC"
    for (int r : members) h = mix(h, static_cast<uint32_t>(r));
  }
  halves[1] = mix(halves[1], halves[0]);
  std::memcpy(out, halves, sizeof halves);
}

// Over the parent's links, which stay usable.
Status shrinkOverLinks(const std::shared_ptr<Communicator>& parent, const std::vector<int>& members, int myIndex,
                       const CommSettings& settings, std::shared_ptr<Communicator>& out) {
  SubsetOob oob("hclCommShrink", parent, members, myIndex);
  const uint64_t mine = parent->shrinkSerial();
  std::vector<std::vector<uint8_t>> serials;
  HCL_TRY(oob.allgather(std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(&mine),
                                             reinterpret_cast<const uint8_t*>(&mine) + sizeof mine),
                        serials));
  uint64_t serial = 0;
  for (const auto& bytes : serials) {
    uint64_t theirs = 0;
    if (bytes.size() != sizeof theirs) return internalError("a member sent a malformed shrink serial");
    std::memcpy(&theirs, bytes.data(), sizeof theirs);
    serial = std::max(serial, theirs);
  }
  parent->setShrinkSerial(serial + 1);
  // The tag also covers the member list, so shrinks of one parent to
  // different lists never share a tag.
  uint64_t tag = mix(mix(parent->commTag(), serial), 0x5348524eull);  // "SHRN"
  for (int r : members) tag = mix(tag, static_cast<uint32_t>(r));
  return initCommunicator(oob, static_cast<int>(members.size()), myIndex, parent->secret(), tag, settings, nullptr,
                          out);
}

// Without the parent's links (failed, aborted or revoked): the first member
// starts a bootstrap root on the port it published at init, and the others
// join it to build a communicator of `members`.
Status meetAtRescueRoot(const std::shared_ptr<Communicator>& parent, const std::vector<int>& members,
                               int myIndex, const CommSettings& settings, std::shared_ptr<Communicator>& out) {
  const PeerInfo& host = parent->peers()[static_cast<size_t>(members.front())];
  if (host.rescuePort == 0) {
    return systemError(fmt::format("rank {}, which would host the members' bootstrap, holds no rescue port; "
                                   "abort the communicator and create a new one with hclCommInitRank",
                                   members.front()));
  }
  UniqueIdContents contents;
  rescueSecret(parent->secret(), members, contents.secret);
  contents.rootIp = host.rescueIp;
  contents.rootPort = host.rescuePort;
  contents.rootStartedByRank0 = true;
  if (myIndex == 0) parent->releaseRescuePort();
  hclUniqueId id;
  encodeUniqueId(contents, &id);
  const int n = static_cast<int>(members.size());
  std::unique_ptr<Oob> oob;
  HCL_TRY(connectBootstrap(id, n, myIndex, settings.timeoutMs, nullptr, oob));
  return initCommunicator(*oob, n, myIndex, contents.secret, rootCommTag(contents.secret), settings, nullptr, out);
}

}  // namespace

Status splitCommunicator(const std::shared_ptr<Communicator>& parent, int color, int key,
                         const CommSettings& settings, std::shared_ptr<Communicator>& out) {
  out.reset();
  if (!parent->revoked()) return splitOverLinks(parent, color, key, settings, out);
  // A revoke broke the links: every rank first meets at the rescue root to
  // rebuild the whole communicator, which the split then runs over.
  std::vector<int> everyone(static_cast<size_t>(parent->nranks()));
  for (int r = 0; r < parent->nranks(); ++r) everyone[static_cast<size_t>(r)] = r;
  std::shared_ptr<Communicator> rebuilt;
  HCL_TRY(meetAtRescueRoot(parent, everyone, parent->rank(), settings, rebuilt));
  return splitOverLinks(rebuilt, color, key, settings, out);
}

Status shrinkCommunicator(const std::shared_ptr<Communicator>& parent, const std::vector<int>& excluded,
                          bool abortParent, const CommSettings& settings, std::shared_ptr<Communicator>& out) {
  out.reset();
  std::vector<int> members;
  for (int r = 0; r < parent->nranks(); ++r) {
    if (std::find(excluded.begin(), excluded.end(), r) == excluded.end()) members.push_back(r);
  }
  const int myIndex = static_cast<int>(std::find(members.begin(), members.end(), parent->rank()) - members.begin());
  if (abortParent && !parent->abortFlag().load()) parent->requestAbort();
  // After the parent's earlier operations: one of them may still fail it.
  parent->issueOrder().waitUntilIdle(parent->abortFlag(), parent->settings().spinUs);
  if (parent->abortFlag().load() || !parent->failure().ok()) {
    return meetAtRescueRoot(parent, members, myIndex, settings, out);
  }
  return shrinkOverLinks(parent, members, myIndex, settings, out);
}

}  // namespace hcl
