#include "collective_checks.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "multiprocess.h"

namespace hcltest {
namespace {

enum ReductionKind { kAllReduce = 0, kReduceScatter = 1, kReduce = 2 };

const char* opName(TestOp op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg", "premulsum(immediate)", "premulsum(pointer)"};
  return names[static_cast<int>(op)];
}

int compareBytes(const char* what, const uint8_t* got, const uint8_t* want, size_t bytes, size_t es,
                 hclDataType_t t, size_t count) {
  if (bytes == 0 || std::memcmp(got, want, bytes) == 0) return 0;
  for (size_t i = 0; i < bytes; ++i) {
    if (got[i] != want[i]) {
      std::fprintf(stderr, "%s: %s count %zu: first difference at element %zu (byte %zu): got 0x%02x want 0x%02x\n",
                   what, hcl::dataTypeName(t), count, i / es, i, got[i], want[i]);
      break;
    }
  }
  return 1;
}

struct Rank {
  int rank, n;
};

// Whether this thread's checks put their buffers in the communicator's
// device memory (CheckConfig::deviceMemory).
thread_local bool tlsOnDevice = false;
thread_local bool tlsShared = false;  // CheckConfig::sharedMemory

// A host vector and, when the checks run on device memory, its copy in the
// communicator's memory. HCL gets pointers from at(); results come back into
// the vector with pull().
class Mirror {
 public:
  Mirror(hclComm_t comm, std::vector<uint8_t>& host) : comm_(comm), host_(host) {
    if (host.empty()) return;
    if (tlsShared) {
      shared_ = true;
      if (hclMemAlloc(&dev_, host.size()) != hclSuccess) {
        std::fprintf(stderr, "hclMemAlloc of %zu bytes: %s\n", host.size(), hclGetLastError(nullptr));
        std::abort();
      }
      std::memcpy(dev_, host.data(), host.size());
      return;
    }
    if (!tlsOnDevice) return;
    if (hclCommMemAlloc(comm, &dev_, host.size()) != hclSuccess ||
        hclCommMemcpy(comm, dev_, host.data(), host.size()) != hclSuccess) {
      std::fprintf(stderr, "device buffer of %zu bytes: %s\n", host.size(), hclGetLastError(comm));
      std::abort();
    }
  }
  ~Mirror() {
    if (dev_ && shared_) hclMemFree(dev_);
    else if (dev_) hclCommMemFree(comm_, dev_);
  }
  Mirror(const Mirror&) = delete;
  Mirror& operator=(const Mirror&) = delete;
  uint8_t* at(size_t offset = 0) { return dev_ ? static_cast<uint8_t*>(dev_) + offset : host_.data() + offset; }
  void pull() {
    if (dev_ && shared_) std::memcpy(host_.data(), dev_, host_.size());
    else if (dev_) hclCommMemcpy(comm_, host_.data(), dev_, host_.size());
  }

 private:
  hclComm_t comm_;
  std::vector<uint8_t>& host_;
  void* dev_ = nullptr;
  bool shared_ = false;
};

Rank whoAmI(hclComm_t comm) {
  Rank r{};
  hclCommUserRank(comm, &r.rank);
  hclCommCount(comm, &r.n);
  return r;
}

}  // namespace

int checkReduction(hclComm_t comm, int kind, TestOp op, hclDataType_t t, size_t count, bool inPlace) {
  const auto [rank, n] = whoAmI(comm);
  const size_t es = hcl::dataTypeSize(t);
  const size_t nr = static_cast<size_t>(n);
  const size_t inCount = kind == kReduceScatter ? count * nr : count;
  const int root = static_cast<int>(count % nr);
  std::vector<uint8_t> send(inCount * es), recv(count * es, 0xEE);
  const hclRedOp_t base = builtinFor(op);
  for (size_t i = 0; i < inCount; ++i) storeValue(t, send.data(), i, inputValue(base, rank, i));

  hclRedOp_t redop = base;
  std::vector<uint8_t> scalar(es);
  storeValue(t, scalar.data(), 0, preMulScalarFor(rank));
  Mirror sendM(comm, send), recvM(comm, recv), scalarM(comm, scalar);
  if (op == TestOp::PreMulImmediate || op == TestOp::PreMulPointer) {
    RANK_HCL(hclRedOpCreatePreMulSum(&redop, op == TestOp::PreMulImmediate ? scalar.data() : scalarM.at(), t,
                                     op == TestOp::PreMulImmediate ? hclScalarHostImmediate : hclScalarDevice, comm));
  }
  const void* sendPtr = sendM.at();
  void* recvPtr = recvM.at();
  const size_t inPlaceOffset = kind == kReduceScatter ? static_cast<size_t>(rank) * count * es : 0;
  if (inPlace) recvPtr = sendM.at(inPlaceOffset);
  hclResult_t res = hclSuccess;
  switch (kind) {
    case kAllReduce: res = hclAllReduce(sendPtr, recvPtr, count, t, redop, comm, nullptr); break;
    case kReduceScatter: res = hclReduceScatter(sendPtr, recvPtr, count, t, redop, comm, nullptr); break;
    case kReduce: res = hclReduce(sendPtr, recvPtr, count, t, redop, root, comm, nullptr); break;
  }
  static const char* names[] = {"allreduce", "reducescatter", "reduce"};
  RANK_CHECK(res == hclSuccess, "%s %s %s count %zu: %s", names[kind], opName(op), hcl::dataTypeName(t), count,
             hclGetLastError(comm));
  if (redop != base) RANK_HCL(hclRedOpDestroy(redop, comm));
  if (kind == kReduce && rank != root) return 0;
  const uint8_t* got = recv.data();
  if (inPlace) {
    sendM.pull();
    got = send.data() + inPlaceOffset;
  } else {
    recvM.pull();
  }
  std::vector<uint8_t> want(count * es);
  const size_t firstIndex = kind == kReduceScatter ? static_cast<size_t>(rank) * count : 0;
  for (size_t i = 0; i < count; ++i) storeValue(t, want.data(), i, expectedValue(op, t, n, firstIndex + i));
  std::string what = std::string(names[kind]) + " " + opName(op) + (inPlace ? " in-place" : " out-of-place") +
                     " rank " + std::to_string(rank) + "/" + std::to_string(n);
  return compareBytes(what.c_str(), got, want.data(), count * es, es, t, count);
}

namespace {

int checkDataMovement(hclComm_t comm, hclDataType_t t, size_t count, bool inPlace) {
  const auto [rank, n] = whoAmI(comm);
  const size_t es = hcl::dataTypeSize(t), nr = static_cast<size_t>(n), block = count * es;
  const int root = static_cast<int>((count + 1) % nr);
  std::string where = std::string(inPlace ? " in-place" : " out-of-place") + " rank " + std::to_string(rank) + "/" +
                      std::to_string(n);
  auto pattern = [&](int r, size_t bytes, size_t offset = 0) {
    std::vector<uint8_t> v(bytes);
    for (size_t j = 0; j < bytes; ++j) v[j] = patternByte(r, offset + j);
    return v;
  };
  int failures = 0;

  {  // AllGather
    std::vector<uint8_t> recv(block * nr, 0xEE), send = pattern(rank, block);
    if (inPlace) std::copy_n(send.data(), block, recv.data() + static_cast<size_t>(rank) * block);  // not memcpy: data() is null when count is 0
    Mirror sendM(comm, send), recvM(comm, recv);
    const void* s = inPlace ? recvM.at(static_cast<size_t>(rank) * block) : sendM.at();
    RANK_HCL(hclAllGather(s, recvM.at(), count, t, comm, nullptr));
    recvM.pull();
    std::vector<uint8_t> want;
    for (int r = 0; r < n; ++r) {
      auto p = pattern(r, block);
      want.insert(want.end(), p.begin(), p.end());
    }
    failures += compareBytes(("allgather" + where).c_str(), recv.data(), want.data(), want.size(), es, t, count);
  }
  {  // Broadcast and Bcast
    std::vector<uint8_t> send = pattern(root, block), recv(block, 0xEE);
    if (inPlace) {
      std::vector<uint8_t> buf = rank == root ? send : std::vector<uint8_t>(block, 0xEE);
      Mirror bufM(comm, buf);
      RANK_HCL(hclBcast(bufM.at(), count, t, root, comm, nullptr));
      bufM.pull();
      failures += compareBytes(("bcast" + where).c_str(), buf.data(), send.data(), block, es, t, count);
    } else {
      Mirror sendM(comm, send), recvM(comm, recv);
      RANK_HCL(hclBroadcast(rank == root ? sendM.at() : nullptr, recvM.at(), count, t, root, comm, nullptr));
      recvM.pull();
      failures += compareBytes(("broadcast" + where).c_str(), recv.data(), send.data(), block, es, t, count);
    }
  }
  {  // AlltoAll: block j of rank r goes to rank j
    std::vector<uint8_t> send = pattern(rank, block * nr), recv(block * nr, 0xEE);
    Mirror sendM(comm, send), recvM(comm, recv);
    RANK_HCL(hclAlltoAll(sendM.at(), inPlace ? sendM.at() : recvM.at(), count, t, comm, nullptr));
    (inPlace ? sendM : recvM).pull();
    std::vector<uint8_t> want;
    for (int p = 0; p < n; ++p) {
      auto pp = pattern(p, block, static_cast<size_t>(rank) * block);
      want.insert(want.end(), pp.begin(), pp.end());
    }
    failures += compareBytes(("alltoall" + where).c_str(), (inPlace ? send : recv).data(), want.data(), want.size(), es,
                             t, count);
  }
  {  // Gather
    std::vector<uint8_t> send = pattern(rank, block), recv(block * nr, 0xEE);
    const bool rootInPlace = inPlace && rank == root;
    if (rootInPlace) std::copy_n(send.data(), block, recv.data() + static_cast<size_t>(rank) * block);  // not memcpy: data() is null when count is 0
    Mirror sendM(comm, send), recvM(comm, recv);
    const void* s = rootInPlace ? recvM.at(static_cast<size_t>(rank) * block) : sendM.at();
    RANK_HCL(hclGather(s, rank == root ? recvM.at() : nullptr, count, t, root, comm, nullptr));
    if (rank == root) {
      recvM.pull();
      std::vector<uint8_t> want;
      for (int p = 0; p < n; ++p) {
        auto pp = pattern(p, block);
        want.insert(want.end(), pp.begin(), pp.end());
      }
      failures += compareBytes(("gather" + where).c_str(), recv.data(), want.data(), want.size(), es, t, count);
    }
  }
  {  // Scatter
    std::vector<uint8_t> send = pattern(root, block * nr), recv(block, 0xEE);
    const bool rootInPlace = inPlace && rank == root;
    Mirror sendM(comm, send), recvM(comm, recv);
    void* r = rootInPlace ? sendM.at(static_cast<size_t>(rank) * block) : recvM.at();
    RANK_HCL(hclScatter(rank == root ? sendM.at() : nullptr, r, count, t, root, comm, nullptr));
    (rootInPlace ? sendM : recvM).pull();
    const uint8_t* got = rootInPlace ? send.data() + static_cast<size_t>(rank) * block : recv.data();
    auto want = pattern(root, block, static_cast<size_t>(rank) * block);
    failures += compareBytes(("scatter" + where).c_str(), got, want.data(), block, es, t, count);
  }
  {  // Send/Recv ring shift inside a group; in place, one buffer is both sent and received into
    std::vector<uint8_t> send = pattern(rank, block), recv(block, 0xEE);
    Mirror sendM(comm, send), recvM(comm, recv);
    Mirror& intoM = inPlace ? sendM : recvM;
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    RANK_HCL(hclGroupStart());
    RANK_HCL(hclSend(sendM.at(), count, t, next, comm, nullptr));
    RANK_HCL(hclRecv(intoM.at(), count, t, prev, comm, nullptr));
    RANK_HCL(hclGroupEnd());
    intoM.pull();
    auto want = pattern(prev, block);
    failures += compareBytes(("sendrecv" + where).c_str(), inPlace ? send.data() : recv.data(), want.data(), block,
                             es, t, count);
  }
  return failures;
}

}  // namespace

int checkAllCollectives(hclComm_t comm, const CheckConfig& cfg) {
  int failures = 0;
  tlsOnDevice = cfg.deviceMemory;
  tlsShared = cfg.sharedMemory;
  const TestOp ops[] = {TestOp::Sum, TestOp::Prod, TestOp::Max, TestOp::Min,
                        TestOp::Avg, TestOp::PreMulImmediate, TestOp::PreMulPointer};
  for (int ti = 0; ti < hclNumTypes; ++ti) {
    const auto t = static_cast<hclDataType_t>(ti);
    for (bool inPlace : {false, true}) {
      for (size_t count : cfg.counts) {
        for (int kind = 0; kind < 3; ++kind) {
          for (TestOp op : ops) failures += checkReduction(comm, kind, op, t, count, inPlace);
        }
        failures += checkDataMovement(comm, t, count, inPlace);
      }
      // bf16 and fp16 for their fused kernels, which only whole vectors reach.
      const bool big =
          cfg.bigForEveryType || t == hclFloat32 || t == hclInt8 || t == hclBfloat16 || t == hclFloat16;
      if (!big) continue;
      for (size_t count : cfg.bigCounts) {
        // Pre-multiplied sums with a scalar per rank: each rank's input must
        // be scaled by its own scalar, whoever reduces it.
        for (TestOp op : {TestOp::Sum, TestOp::PreMulImmediate})
          for (int kind = 0; kind < 3; ++kind) failures += checkReduction(comm, kind, op, t, count, inPlace);
        failures += checkReduction(comm, 0, TestOp::Avg, t, count, inPlace);
        failures += checkDataMovement(comm, t, count, inPlace);
      }
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace hcltest
