#include "core/ipc_layout.h"

#include <algorithm>

#include "core/datatype.h"

namespace hcl {
namespace {

struct Range {
  size_t begin = 0, len = 0;  // elements
};

// Rank r's share of `total`, the first `total % n` ranks one larger.
Range shardOf(size_t total, int n, int r) {
  const size_t un = static_cast<size_t>(n), ur = static_cast<size_t>(r);
  const size_t base = total / un, extra = total % un;
  return {ur * base + std::min(ur, extra), base + (ur < extra ? 1 : 0)};
}

const void* at(const void* p, size_t bytes) { return static_cast<const std::byte*>(p) + bytes; }
void* at(void* p, size_t bytes) { return static_cast<std::byte*>(p) + bytes; }

}  // namespace

bool ipcServes(CollKind kind, size_t count, ReduceKind op) {
  if (count == 0 || kind == CollKind::SendRecv || kind == CollKind::Control) return false;
  // A pre-multiplied sum scales each input by its owner's scalar, which the
  // rank that reads it does not know.
  const bool reduces = kind == CollKind::AllReduce || kind == CollKind::Reduce || kind == CollKind::ReduceScatter;
  return !(reduces && op == ReduceKind::PreMulSum);
}

IpcBufferUse ipcBufferUse(const CollArgs& a) {
  const CallBufferBytes bytes = callBufferBytes(a);
  const bool root = a.rank == a.root;
  IpcBufferUse u{true, true, bytes.send, bytes.recv};
  if (a.kind == CollKind::Broadcast || a.kind == CollKind::Scatter) u.send = root;
  if (a.kind == CollKind::Reduce || a.kind == CollKind::Gather) u.recv = root;
  if (a.kind == CollKind::SendRecv || a.kind == CollKind::Control) u = {};
  return u;
}

size_t ipcSegmentRows(const CollArgs& a) { return a.kind == CollKind::AlltoAll ? static_cast<size_t>(a.nranks) : 1; }

size_t ipcSegmentWidth(const CollArgs& a) {
  const size_t shard = (a.count + static_cast<size_t>(a.nranks) - 1) / static_cast<size_t>(a.nranks);
  const size_t es = dataTypeSize(a.type);
  switch (a.kind) {
    case CollKind::AllReduce:
    case CollKind::Reduce: return shard;
    case CollKind::ReduceScatter: return a.count;
    case CollKind::Broadcast: return shard * es / 16 + 1;
    default: return a.count * es / 16 + 1;
  }
}

size_t ipcSegments(const CollArgs& a, const std::vector<const void*>& send, const std::vector<void*>& recv,
                   IpcSegment* out) {
  const int n = a.nranks, r = a.rank;
  const size_t es = dataTypeSize(a.type);
  const size_t block = a.count * es;
  auto reduceFromAll = [&](IpcSegment& s, size_t srcOffset, size_t elems) {
    s.op = IpcSegment::Reduce;
    s.count = elems;
    s.nsrc = static_cast<uint32_t>(n);
    for (int p = 0; p < n; ++p) s.src[p] = at(send[static_cast<size_t>(p)], srcOffset);
  };
  auto copyOf = [&](IpcSegment& s, const void* src, size_t bytes) {
    s.op = IpcSegment::Copy;
    s.count = bytes;
    s.nsrc = 1;
    s.src[0] = src;
  };
  IpcSegment& s = out[0];
  s = IpcSegment{};
  switch (a.kind) {
    case CollKind::AllReduce:
    case CollKind::Reduce: {
      // Each rank reduces its shard of every rank's input and stores it in
      // every output (allreduce) or the root's (reduce).
      const Range shard = shardOf(a.count, n, r);
      if (shard.len == 0) return 0;
      reduceFromAll(s, shard.begin * es, shard.len);
      for (int p = 0; p < n; ++p) {
        if (a.kind == CollKind::Reduce && p != a.root) continue;
        s.dst[s.ndst++] = at(recv[static_cast<size_t>(p)], shard.begin * es);
      }
      return 1;
    }
    case CollKind::ReduceScatter:
      reduceFromAll(s, static_cast<size_t>(r) * block, a.count);
      s.dst[s.ndst++] = recv[static_cast<size_t>(r)];
      return 1;
    case CollKind::Broadcast: {
      // Each rank copies its shard of the root's data into every output.
      const Range shard = shardOf(a.count, n, r);
      if (shard.len == 0) return 0;
      copyOf(s, at(send[static_cast<size_t>(a.root)], shard.begin * es), shard.len * es);
      for (int p = 0; p < n; ++p) s.dst[s.ndst++] = at(recv[static_cast<size_t>(p)], shard.begin * es);
      return 1;
    }
    case CollKind::AllGather:
      copyOf(s, send[static_cast<size_t>(r)], block);
      for (int p = 0; p < n; ++p) s.dst[s.ndst++] = at(recv[static_cast<size_t>(p)], static_cast<size_t>(r) * block);
      return 1;
    case CollKind::Gather:
      copyOf(s, send[static_cast<size_t>(r)], block);
      s.dst[s.ndst++] = at(recv[static_cast<size_t>(a.root)], static_cast<size_t>(r) * block);
      return 1;
    case CollKind::Scatter:
      copyOf(s, at(send[static_cast<size_t>(a.root)], static_cast<size_t>(r) * block), block);
      s.dst[s.ndst++] = recv[static_cast<size_t>(r)];
      return 1;
    case CollKind::AlltoAll:
      // Block p of this rank's input goes to block r of rank p's output.
      for (int p = 0; p < n; ++p) {
        IpcSegment& c = out[p];
        c = IpcSegment{};
        copyOf(c, at(send[static_cast<size_t>(r)], static_cast<size_t>(p) * block), block);
        c.dst[c.ndst++] = at(recv[static_cast<size_t>(p)], static_cast<size_t>(r) * block);
      }
      return static_cast<size_t>(n);
    default: return 0;
  }
}

}  // namespace hcl
