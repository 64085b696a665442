#include "collectives/algorithms/direct_steps.h"

#include <algorithm>

namespace hcl::direct {

Shard shardOf(size_t total, int n, int r) {
  const size_t un = static_cast<size_t>(n), ur = static_cast<size_t>(r);
  const size_t base = total / un, extra = total % un;
  return {ur * base + std::min(ur, extra), base + (ur < extra ? 1 : 0)};
}

std::vector<int> peersAfter(int r, int n) {
  std::vector<int> peers;
  for (int i = 1; i < n; ++i) peers.push_back((r + i) % n);
  return peers;
}

void openPeers(ScheduleBuilder& b, int self, const std::vector<int>& peers) {
  std::vector<uint32_t> recvs;
  for (int p : peers) recvs.push_back(b.exchangeAddresses(self, p));
  b.waitAll(recvs);
}

std::vector<uint32_t> signalPeers(ScheduleBuilder& b, const std::vector<int>& notify, const std::vector<int>& await) {
  std::vector<uint32_t> recvs;
  for (int p : await) recvs.push_back(b.recv(p, sendAt(0), 0));
  for (int p : notify) b.send(p, sendAt(0), 0);
  return recvs;
}

size_t windowTurns(size_t windowBytes, size_t rotateWithin) {
  constexpr size_t kMaxTurns = 8;
  return std::clamp<size_t>(rotateWithin / std::max<size_t>(windowBytes, 1), 1, kMaxTurns);
}

bool ownBlockPastCache(size_t blockBytes, int nranks) {
  constexpr size_t kStreamOutputsFrom = 64u << 20;
  const size_t n = static_cast<size_t>(std::max(nranks, 1));
  return blockBytes * n * n >= kStreamOutputsFrom;
}

size_t sliceElements(const CollArgs& a) {
  const size_t widest = std::max(dataTypeSize(a.type), accumulatorSize(a.type));
  return std::max<size_t>(1, a.chunkBytes / widest);
}

size_t shardSliceElements(const CollArgs& a) {
  // Each slice is read from the peer, reduced and written back while it is
  // still in this core's cache. On AMD EPYC (Zen 4) 512 KiB did 4-19% better
  // than 128 KiB from 512 KiB to 16 MiB, allreduce and reduce-scatter alike.
  // On Intel Xeon (2 ranks, malloc buffers) 128 KiB did 10-20% better than
  // 512 KiB from 1 to 8 MiB (64 KiB slower again), and on an Emerald Rapids
  // host 256 KiB took 0.77-0.97x 128 KiB's time for the all-reduce at
  // 256 KiB-4 MiB (the reduce 0.79-1.0x, the reduce-scatter level; 512 KiB
  // 1.08-1.12x behind at 16 MiB). Where ranks share CPUs (4 ranks on
  // 2 cores) 256 KiB ran 0.85-1.19x, so those keep 128 KiB.
  size_t sliceBytes = 128 * 1024;
  if (a.cpuFamily == CpuFamily::Amd)
    sliceBytes = 512 * 1024;
  else if (!a.sharedCpus)
    sliceBytes = 256 * 1024;
  const size_t widest = std::max(dataTypeSize(a.type), accumulatorSize(a.type));
  return std::max<size_t>(1, std::min(a.chunkBytes, sliceBytes) / widest);
}

void reduceAcrossPeers(ScheduleBuilder& b, const std::vector<int>& peers, BufferRef own,
                       const std::function<BufferRef(int)>& peerSource, size_t elemBytes, size_t m, BufferRef dst,
                       bool dstApart, BufferRef tmp, BufferRef acc) {
  if (peers.empty()) {
    b.convert(dst, Form::Native, own, Form::Native, m);
    return;
  }
  for (size_t i = 0; i < peers.size(); ++i) {
    const bool first = i == 0, last = i + 1 == peers.size();
    const BufferRef into = last ? dst : acc;
    const Form intoForm = last ? Form::Native : Form::Acc;
    const BufferRef other = first ? own : acc;
    // Read into the destination, the kernel then streams two buffers
    // instead of three (2 ranks, 64 KiB reduce: 0.8 -> 1.05x Open MPI).
    b.reducePeer(peers[i], into, intoForm, peerSource(peers[i]), Form::Native, other,
                 first ? Form::Native : Form::Acc, m, m * elemBytes, last && dstApart ? dst : tmp);
  }
}

}  // namespace hcl::direct
