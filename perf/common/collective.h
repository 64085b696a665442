// What one perf binary contributes to the common driver: its buffer sizes,
// its bus-bandwidth factor, how its data is prepared and checked, and the
// call itself. Each binary defines perfCollective().
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/plan/collective.h"
#include "hcl.h"

namespace hcl::perf {

// Element counts of one call for a given message size (nccl-tests'
// getCollByteCount). In place, the send buffer is recvbuff +
// sendInplaceOffset * rank and the result is at recvbuff + recvInplaceOffset * rank.
struct CollCounts {
  size_t send = 0;
  size_t recv = 0;
  size_t param = 0;  // the count argument of the call
  size_t sendInplaceOffset = 0;
  size_t recvInplaceOffset = 0;
};

// Everything a collective needs to fill one rank's buffers.
struct InitArgs {
  hclDataType_t type = hclFloat32;
  int op = 0;
  int root = -1;
  uint64_t seed = 0;
  bool inPlace = false;
  int rank = 0;
  int nranks = 1;
  CollCounts counts;
  size_t eltSize = 0;
  unsigned char* send = nullptr;      // send buffer (unused in place)
  unsigned char* recv = nullptr;      // receive buffer, zeroed before the call
  unsigned char* expected = nullptr;  // counts.recv elements; null when only inputs are wanted

  unsigned char* input() const { return inPlace ? recv + counts.sendInplaceOffset * eltSize * rank : send; }
  unsigned char* output() const { return recv + (inPlace ? counts.recvInplaceOffset * eltSize * rank : 0); }
};

struct CallArgs {
  const void* send;
  void* recv;
  size_t count;
  hclDataType_t type;
  hclRedOp_t op;
  int root;
  int rank;
  int nranks;
  hclComm_t comm;
  hclStream_t stream;
  int round;  // of rounds(nranks); 0 for a test without rounds
};

struct CollectiveTest {
  const char* name;      // "AllReduce"
  CollKind kind;         // HCL's collective (SendRecv for tests built on hclSend/hclRecv)
  bool reduces;          // iterates -o
  bool rooted;           // iterates -r and prints the root
  bool checksInPlace;    // false: nccl-tests does not check the in-place run (N/A)
  bool needsPowerOfTwo;  // hypercube
  CollCounts (*counts)(size_t count, size_t eltSize, int nranks);
  // algbw and busbw in GB/s for `sec` seconds per call; count is counts().param.
  void (*bandwidth)(size_t count, size_t typeSize, double sec, int nranks, double& algBw, double& busBw);
  void (*initData)(const InitArgs& args);
  hclResult_t (*run)(const CallArgs& call);
  // A call made of rounds that read what earlier rounds received (null: one
  // round). With several ranks per thread (-g), each round of every rank is
  // one group: a single group over all of them would let a round start
  // before the data it sends had arrived.
  int (*rounds)(int nranks) = nullptr;
  // Iterates -o and prints the operator without reducing (nccl-tests'
  // sendrecv does); a test that reduces iterates them anyway.
  bool listsOps = false;
  bool iteratesOps() const { return reduces || listsOps; }
};

// Defined once per binary (perf/<collective>.cc).
const CollectiveTest& perfCollective();

// nccl-tests aligns per-rank slices to 16 bytes: (count / nranks) rounded down
// to a multiple of 16 / eltSize elements.
inline size_t alignedSlice(size_t count, size_t eltSize, int nranks) {
  const size_t align = eltSize >= 16 ? 1 : 16 / eltSize;
  return (count / static_cast<size_t>(nranks)) / align * align;
}

}  // namespace hcl::perf
