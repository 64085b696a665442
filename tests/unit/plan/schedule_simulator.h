// Runs the schedules of n ranks in one thread over in-memory FIFOs, with the
// real reduction kernels: a transport-free check of the algorithms.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "collectives/plan/schedule.h"

namespace hcltest {

struct SimRank {
  hcl::Schedule schedule;
  const void* send = nullptr;
  void* recv = nullptr;
  hcl::ReduceSpec spec;
  // Bounds for peers' ReadPeer/WritePeer on this rank's buffers.
  size_t sendBytes = SIZE_MAX, recvBytes = SIZE_MAX;
  // Whether the send and receive buffers count as shareable (hclMemAlloc),
  // for steps conditional on it.
  bool shareable = false;
  // What this rank proposes for runs that may stage (the first rank's
  // proposal decides, as in the executor).
  bool proposeStaging = true;
  // Set by simulate(): whether the run took its Only::Staged steps (-1:
  // it had no conditional step).
  int tookStaged = -1;
};

// Returns "" on success or a description of the deadlock / mismatch.
inline std::string simulate(std::vector<SimRank>& ranks) {
  using hcl::Step;
  constexpr size_t kWordsPerEntry = hcl::kAddressEntryBytes / sizeof(uint64_t);
  const size_t n = ranks.size();
  struct Msg {
    const std::byte* data;
    size_t bytes;
    size_t rank;
    uint32_t transfer;
  };
  struct State {
    size_t pc = 0;
    std::vector<std::byte> scratch;
    std::vector<bool> done;
    std::vector<std::pair<void*, size_t>> recvTarget;  // for posted receives
    std::vector<int> recvPeer;
    // Per rank, as the schedule learnt them: the executor's AddressEntry
    // (an address and, in the next word, a shareable serial per buffer).
    std::vector<uint64_t> addresses;
    int staged = -1;
  };
  constexpr size_t kSendWord = hcl::kAddressSendOffset / 8, kRecvWord = hcl::kAddressRecvOffset / 8,
                   kScratchWord = hcl::kAddressScratchOffset / 8, kFlagsWord = hcl::kAddressFlagsOffset / 8;
  std::vector<std::vector<std::deque<Msg>>> wire(n, std::vector<std::deque<Msg>>(n));  // [src][dst]
  std::vector<std::vector<std::deque<uint32_t>>> posted(n, std::vector<std::deque<uint32_t>>(n));  // [dst][src]
  std::vector<State> st(n);
  for (size_t r = 0; r < n; ++r) {
    st[r].scratch.resize(ranks[r].schedule.scratchBytes);
    st[r].done.assign(ranks[r].schedule.transfers, false);
    st[r].recvTarget.resize(ranks[r].schedule.transfers);
    st[r].recvPeer.assign(ranks[r].schedule.transfers, -1);
    st[r].addresses.assign(kWordsPerEntry * n, 0);
    uint64_t* own = &st[r].addresses[kWordsPerEntry * r];
    own[kSendWord] = reinterpret_cast<uintptr_t>(ranks[r].send);
    own[kRecvWord] = reinterpret_cast<uintptr_t>(ranks[r].recv);
    own[kScratchWord] = reinterpret_cast<uintptr_t>(st[r].scratch.data());
    own[kSendWord + 1] = own[kRecvWord + 1] = ranks[r].shareable ? 1 : 0;
    own[kFlagsWord] = ranks[r].proposeStaging ? hcl::kProposeStaging : 0;
  }
  // As the executor decides: stage unless every exchanged entry's send and
  // recv are shareable, and only where the first rank proposes it.
  auto runs = [&](size_t r, const Step& step) {
    if (step.only == hcl::Only::Always) return true;
    if (st[r].staged < 0) {
      bool all = true;
      size_t first = n;
      for (size_t p = 0; p < n; ++p) {
        const uint64_t* e = &st[r].addresses[kWordsPerEntry * p];
        if (e[kSendWord] == 0 && e[kRecvWord] == 0 && p != r) continue;  // no entry from p
        first = std::min(first, p);
        all = all && e[kSendWord + 1] != 0 && e[kRecvWord + 1] != 0;
      }
      const bool proposed = (st[r].addresses[kWordsPerEntry * first + kFlagsWord] & hcl::kProposeStaging) != 0;
      st[r].staged = !all && proposed ? 1 : 0;
    }
    return (step.only == hcl::Only::Staged) == (st[r].staged == 1);
  };
  auto resolve = [&](size_t r, const hcl::BufferRef& ref) -> std::byte* {
    switch (ref.id) {
      case hcl::BufferId::Send: return static_cast<std::byte*>(const_cast<void*>(ranks[r].send)) + ref.offset;
      case hcl::BufferId::Recv: return static_cast<std::byte*>(ranks[r].recv) + ref.offset;
      case hcl::BufferId::Scratch: return st[r].scratch.data() + ref.offset;
      case hcl::BufferId::Addresses: return reinterpret_cast<std::byte*>(st[r].addresses.data()) + ref.offset;
      default: return nullptr;
    }
  };
  // Rank r's view of peer p's buffer: only through addresses it was sent.
  std::string peerError;
  auto peerBuffer = [&](size_t r, size_t p, const hcl::BufferRef& ref, size_t bytes) -> std::byte* {
    const bool isRecv = ref.id == hcl::BufferId::Recv, isScratch = ref.id == hcl::BufferId::Scratch;
    const size_t word = isScratch ? kScratchWord : isRecv ? kRecvWord : kSendWord;
    const uint64_t base = st[r].addresses[kWordsPerEntry * p + word];
    const size_t limit = isScratch ? st[p].scratch.size() : isRecv ? ranks[p].recvBytes : ranks[p].sendBytes;
    if (base == 0 || (ref.id != hcl::BufferId::Send && !isRecv && !isScratch)) {
      peerError = "rank " + std::to_string(r) + " reaches rank " + std::to_string(p) + "'s buffer without its address";
      return nullptr;
    }
    if (limit != SIZE_MAX && ref.offset + bytes > limit) {
      peerError = "rank " + std::to_string(r) + " reaches past rank " + std::to_string(p) + "'s buffer";
      return nullptr;
    }
    return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(base)) + ref.offset;
  };
  // Matches posted receives with sent messages (copying), marking both done.
  auto deliver = [&]() {
    bool moved = false;
    for (size_t dst = 0; dst < n; ++dst) {
      for (size_t src = 0; src < n; ++src) {
        auto& q = wire[src][dst];
        auto& p = posted[dst][src];
        while (!q.empty() && !p.empty()) {
          const Msg m = q.front();
          const uint32_t t = p.front();
          if (m.bytes != st[dst].recvTarget[t].second) return std::string("size mismatch");
          if (m.bytes) std::memcpy(st[dst].recvTarget[t].first, m.data, m.bytes);
          st[dst].done[t] = true;
          st[src].done[m.transfer] = true;
          q.pop_front();
          p.pop_front();
          moved = true;
        }
      }
    }
    return std::string(moved ? "moved" : "");
  };
  while (true) {
    bool progressed = false, allDone = true;
    for (size_t r = 0; r < n; ++r) {
      State& s = st[r];
      const auto& steps = ranks[r].schedule.steps;
      while (s.pc < steps.size()) {
        const Step& step = steps[s.pc];
        if (step.kind == Step::Kind::Wait && !s.done[step.transfer]) break;
        if (!runs(r, step)) {
          ++s.pc;
          progressed = true;
          continue;
        }
        switch (step.kind) {
          case Step::Kind::Send:
            wire[r][static_cast<size_t>(step.peer)].push_back({resolve(r, step.a), step.bytes, r, step.transfer});
            break;
          case Step::Kind::Recv:
            s.recvTarget[step.transfer] = {resolve(r, step.dst), step.bytes};
            posted[r][static_cast<size_t>(step.peer)].push_back(step.transfer);
            break;
          case Step::Kind::Reduce:
            hcl::reduce(resolve(r, step.dst), step.dstForm, resolve(r, step.a), step.aForm, resolve(r, step.b),
                        step.bForm, step.count, ranks[r].spec);
            break;
          case Step::Kind::Convert:
            hcl::convert(resolve(r, step.dst), step.dstForm, resolve(r, step.a), step.aForm, step.count,
                         ranks[r].spec);
            break;
          case Step::Kind::Copy:
            std::memmove(resolve(r, step.dst), resolve(r, step.a), step.bytes);
            break;
          case Step::Kind::ReadPeer:
          case Step::Kind::WritePeer: {
            const bool read = step.kind == Step::Kind::ReadPeer;
            std::byte* remote = peerBuffer(r, static_cast<size_t>(step.peer), read ? step.a : step.dst, step.bytes);
            if (!remote) return peerError;
            std::byte* local = resolve(r, read ? step.dst : step.a);
            if (read) {
              std::memmove(local, remote, step.bytes);
            } else {
              std::memmove(remote, local, step.bytes);
            }
            break;
          }
          case Step::Kind::ReducePeer: {
            const std::byte* remote = peerBuffer(r, static_cast<size_t>(step.peer), step.a, step.bytes);
            if (!remote) return peerError;
            hcl::reduce(resolve(r, step.dst), step.dstForm, remote, step.aForm, resolve(r, step.b), step.bForm,
                        step.count, ranks[r].spec);
            break;
          }
          case Step::Kind::CheckPeerSizes: {
            // The exchanged entry carries the peer's sizes, as the executor's does.
            const size_t p = static_cast<size_t>(step.peer);
            if (st[r].addresses[kWordsPerEntry * p + kSendWord] == 0) {
              return "rank " + std::to_string(r) + " checks rank " + std::to_string(p) + "'s sizes before the exchange";
            }
            if (ranks[p].sendBytes != ranks[r].sendBytes || ranks[p].recvBytes != ranks[r].recvBytes) {
              return "rank " + std::to_string(r) + ": rank " + std::to_string(p) + "'s sizes differ";
            }
            break;
          }
          case Step::Kind::Wait:
            break;
        }
        ++s.pc;
        progressed = true;
      }
      for (bool d : s.done) allDone = allDone && d;
      allDone = allDone && s.pc == steps.size();
    }
    const std::string d = deliver();
    if (d == "size mismatch") return d;
    if (!d.empty()) progressed = true;
    if (allDone) {
      for (size_t r = 0; r < n; ++r) ranks[r].tookStaged = st[r].staged;
      return "";
    }
    if (!progressed) return "deadlock: no rank can make progress";
  }
}

}  // namespace hcltest
