// The tree and rhd (recursive halving/doubling) algorithms: every collective
// they implement, forced through the Planner's override, for 1..9 ranks, on
// the in-memory simulator, checked element by element against a reference.
// Reductions run as int64 Sum and PreMulSum (exact) and as float16 Avg and
// PreMulSum, whose inputs make any extra rounding, scaling or division show.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collectives/algorithms/tree.h"
#include "collectives/plan/plan.h"
#include "collectives/reduce/float_formats.h"
#include "schedule_simulator.h"

namespace {

using hcl::BufferId;
using hcl::BufferRef;
using hcl::CollKind;
using hcl::Form;
using hcl::ReduceKind;
using hcl::Step;

constexpr int kMaxRanks = 9;
constexpr int64_t kIntScalar = 3;
constexpr float kHalfScalar = 0.375f;  // 3/8: products of the inputs stay exact in fp32

// ---- Inputs and the reference -------------------------------------------

int64_t intInput(int rank, size_t i) { return int64_t{rank} * 1000003 + static_cast<int64_t>(i) * 7 - 5000; }

// Values of two magnitudes, all exact in fp16: in [64, 128) in steps of 1/16
// and in [1, 2) in steps of 1/1024. Sums of up to nine (also scaled by 3/8)
// are exact in fp32, but not in fp16, so a partial rounded to fp16 on its way
// changes some results.
float halfInput(int rank, size_t i) {
  const size_t r = static_cast<size_t>(rank);
  if ((r + i) % 2 == 0) {
    return 64.0f + static_cast<float>((i * 7 + r * 3) % 64) + static_cast<float>((r * 5 + i * 3) % 16) / 16.0f;
  }
  return 1.0f + static_cast<float>((r * 13 + i * 11) % 1024) / 1024.0f;
}

struct Numeric {
  const char* name;
  hclDataType_t type;
  ReduceKind op;
};

constexpr Numeric kReductions[] = {
    {"int64 sum", hclInt64, ReduceKind::Sum},
    {"int64 premulsum", hclInt64, ReduceKind::PreMulSum},
    {"float16 avg", hclFloat16, ReduceKind::Avg},
    {"float16 premulsum", hclFloat16, ReduceKind::PreMulSum},
};
// Data movement only cares about element size; the op is unused.
constexpr Numeric kMovements[] = {
    {"int64", hclInt64, ReduceKind::Sum},
    {"float16", hclFloat16, ReduceKind::Sum},
};

// Element i of rank `rank`'s input to a reduction, as stored (bits).
uint64_t reductionInput(hclDataType_t type, int rank, size_t i) {
  if (type == hclInt64) return static_cast<uint64_t>(intInput(rank, i));
  return hcl::floatToHalf(halfInput(rank, i));
}

// The result of reducing element i over n ranks, as the kernels define it
// (docs/numerics.md): scale on load, sum exactly, divide and round once.
uint64_t reducedCode(const Numeric& num, int n, size_t i) {
  const bool preMul = num.op == ReduceKind::PreMulSum;
  if (num.type == hclInt64) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += intInput(r, i) * (preMul ? kIntScalar : 1);
    return static_cast<uint64_t>(sum);
  }
  double sum = 0;
  for (int r = 0; r < n; ++r) sum += static_cast<double>(halfInput(r, i)) * (preMul ? kHalfScalar : 1.0f);
  float acc = static_cast<float>(sum);  // exact
  if (num.op == ReduceKind::Avg) acc /= static_cast<float>(n);
  return hcl::floatToHalf(acc);
}

// Element i of rank `rank`'s input to a data movement: distinct per rank.
uint64_t movementInput(hclDataType_t type, int rank, size_t i) {
  if (type == hclInt64) return static_cast<uint64_t>(rank) * 1000000 + i;
  return 0x1000 + (static_cast<size_t>(rank) * 1021 + i * 13) % 0x5000;  // finite fp16 codes
}

void putCode(std::vector<uint8_t>& buf, size_t elemBytes, size_t i, uint64_t code) {
  std::memcpy(buf.data() + i * elemBytes, &code, elemBytes);  // little-endian
}

uint64_t getCode(const void* buf, size_t elemBytes, size_t i) {
  uint64_t code = 0;
  std::memcpy(&code, static_cast<const uint8_t*>(buf) + i * elemBytes, elemBytes);
  return code;
}

// ---- Schedule checks ------------------------------------------------------

// Every byte a step touches must lie in the rank's send or receive buffer or
// in the schedule's declared scratch, and reductions must be aligned to their
// form's element size. Returns "" or what is wrong.
std::string checkBufferUse(const hcl::Schedule& s, size_t sendBytes, size_t recvBytes, hclDataType_t type,
                           int nranks) {
  auto limit = [&](BufferId id) -> size_t {
    switch (id) {
      case BufferId::Send: return sendBytes;
      case BufferId::Recv: return recvBytes;
      case BufferId::Scratch: return s.scratchBytes;
      case BufferId::User: return 0;
      case BufferId::Addresses: return static_cast<size_t>(nranks) * hcl::kAddressEntryBytes;
    }
    return 0;
  };
  static const char* const kBufferNames[] = {"send", "recv", "scratch", "user", "addresses"};
  std::string error;
  auto check = [&](size_t stepIndex, const BufferRef& ref, size_t bytes, size_t alignment) {
    if (!error.empty() || bytes == 0) return;
    const char* name = kBufferNames[static_cast<size_t>(ref.id)];
    if (ref.offset + bytes > limit(ref.id)) {
      error = "step " + std::to_string(stepIndex) + " touches " + name + " bytes [" + std::to_string(ref.offset) +
              ", " + std::to_string(ref.offset + bytes) + ") of " + std::to_string(limit(ref.id));
    } else if (ref.offset % alignment != 0) {
      error = "step " + std::to_string(stepIndex) + " uses " + name + " offset " + std::to_string(ref.offset) +
              " misaligned for " + std::to_string(alignment) + "-byte elements";
    }
  };
  auto formBytes = [&](Form f) { return hcl::formElementSize(type, f); };
  for (size_t i = 0; i < s.steps.size() && error.empty(); ++i) {
    const Step& st = s.steps[i];
    switch (st.kind) {
      case Step::Kind::Send: check(i, st.a, st.bytes, 1); break;
      case Step::Kind::Recv: check(i, st.dst, st.bytes, 1); break;
      case Step::Kind::Copy:
        check(i, st.dst, st.bytes, 1);
        check(i, st.a, st.bytes, 1);
        break;
      case Step::Kind::Reduce:
        check(i, st.b, st.count * formBytes(st.bForm), formBytes(st.bForm));
        [[fallthrough]];
      case Step::Kind::Convert:
        check(i, st.dst, st.count * formBytes(st.dstForm), formBytes(st.dstForm));
        check(i, st.a, st.count * formBytes(st.aForm), formBytes(st.aForm));
        break;
      // The peer's side is checked by the simulator.
      case Step::Kind::ReadPeer: check(i, st.dst, st.bytes, 1); break;
      case Step::Kind::WritePeer: check(i, st.a, st.bytes, 1); break;
      case Step::Kind::ReducePeer:
        check(i, st.dst, st.count * formBytes(st.dstForm), formBytes(st.dstForm));
        check(i, st.b, st.count * formBytes(st.bForm), formBytes(st.bForm));
        check(i, st.via, st.bytes, formBytes(st.aForm));
        if (error.empty() && st.bytes != st.count * formBytes(st.aForm)) {
          error = "step " + std::to_string(i) + " reads " + std::to_string(st.bytes) + " peer bytes for " +
                  std::to_string(st.count) + " elements";
        }
        break;
      case Step::Kind::Wait:
      case Step::Kind::CheckPeerSizes: break;
    }
    if (error.empty() && hcl::usesTransfer(st.kind) && st.transfer >= s.transfers) {
      error = "step " + std::to_string(i) + " names transfer " + std::to_string(st.transfer) + " of " +
              std::to_string(s.transfers);
    }
  }
  return error;
}

// ---- One simulated call ---------------------------------------------------

struct Call {
  CollKind kind;
  const char* algorithm;
  int nranks;
  size_t count;
  size_t chunkBytes;
  int root;
  bool inPlace;
  Numeric num;
  bool shareable = false;  // buffers as from hclMemAlloc
  bool staged = true;      // the first rank proposes staging (Only::Staged)
  std::vector<int> order;  // the ranks' places in the pairing (Planner::setPairingOrder); empty: none
};

std::string describe(const Call& c) {
  return std::string(hcl::collKindName(c.kind)) + " " + c.algorithm + " nranks " + std::to_string(c.nranks) +
         " count " + std::to_string(c.count) + " chunk " + std::to_string(c.chunkBytes) + " root " +
         std::to_string(c.root) + (c.inPlace ? " in-place " : " out-of-place ") + c.num.name +
         (c.shareable ? " shareable" : "") + (c.staged ? "" : " unstaged") +
         (c.order.empty() ? "" : " in a pairing order");
}

// One rank's buffers, laid out the way NCCL defines in place for the
// collective. `storage` holds the input (and, in place, the output).
struct RankIo {
  std::vector<uint8_t> storage, output;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t sendBytes = 0, recvBytes = 0;
};

constexpr uint8_t kGarbage = 0xEE;

// `input(rank, i)` is the code of input element i of a rank.
std::vector<RankIo> makeBuffers(const Call& c, const std::function<uint64_t(int, size_t)>& input) {
  const size_t es = hcl::dataTypeSize(c.num.type), n = static_cast<size_t>(c.nranks);
  const size_t block = c.count * es;
  std::vector<RankIo> io(n);
  for (int r = 0; r < c.nranks; ++r) {
    RankIo& x = io[static_cast<size_t>(r)];
    auto fill = [&](size_t elems, size_t firstSlot) {
      for (size_t i = 0; i < elems; ++i) putCode(x.storage, es, firstSlot + i, input(r, i));
    };
    const size_t rankOffset = static_cast<size_t>(r) * block;
    switch (c.kind) {
      case CollKind::AllReduce:
      case CollKind::Reduce:
        x.storage.assign(block, kGarbage);
        fill(c.count, 0);
        x.send = x.storage.data();
        x.sendBytes = x.recvBytes = block;
        if (c.inPlace) {
          x.recv = x.storage.data();
        } else if (c.kind == CollKind::AllReduce || r == c.root) {
          x.output.assign(block, kGarbage);
          x.recv = x.output.data();
        } else {
          x.recvBytes = 0;  // a non-root of Reduce has no receive buffer
        }
        break;
      case CollKind::Broadcast:
        x.storage.assign(block, kGarbage);
        if (r == c.root) fill(c.count, 0);
        x.recvBytes = block;
        if (c.inPlace) {
          x.send = x.recv = x.storage.data();
          x.sendBytes = block;
        } else {
          x.output.assign(block, kGarbage);
          x.recv = x.output.data();
          x.send = r == c.root ? x.storage.data() : nullptr;
          x.sendBytes = r == c.root ? block : 0;
        }
        break;
      case CollKind::ReduceScatter:
        x.storage.assign(block * n, kGarbage);
        fill(c.count * n, 0);
        x.send = x.storage.data();
        x.sendBytes = block * n;
        x.recvBytes = block;
        if (c.inPlace) {
          x.recv = x.storage.data() + rankOffset;
        } else {
          x.output.assign(block, kGarbage);
          x.recv = x.output.data();
        }
        break;
      case CollKind::AllGather:
        x.sendBytes = block;
        x.recvBytes = block * n;
        if (c.inPlace) {
          x.storage.assign(block * n, kGarbage);
          fill(c.count, static_cast<size_t>(r) * c.count);
          x.recv = x.storage.data();
          x.send = x.storage.data() + rankOffset;
        } else {
          x.storage.assign(block, kGarbage);
          fill(c.count, 0);
          x.output.assign(block * n, kGarbage);
          x.send = x.storage.data();
          x.recv = x.output.data();
        }
        break;
      case CollKind::AlltoAll:
        x.storage.assign(block * n, kGarbage);
        fill(c.count * n, 0);
        x.send = x.storage.data();
        x.sendBytes = x.recvBytes = block * n;
        if (c.inPlace) {
          x.recv = x.storage.data();
        } else {
          x.output.assign(block * n, kGarbage);
          x.recv = x.output.data();
        }
        break;
      default: break;
    }
  }
  return io;
}

hcl::ReduceSpec specFor(const Call& c) {
  hcl::ReduceSpec spec;
  spec.type = c.num.type;
  spec.kind = c.num.op;
  spec.scalarFloat = kHalfScalar;
  spec.scalarInt = kIntScalar;
  spec.scalarUint = kIntScalar;
  spec.nranks = c.nranks;
  return spec;
}

// Plans every rank with the algorithm forced, checks each schedule, runs them.
std::string simulateCall(const Call& c, std::vector<RankIo>& io) {
  hcl::Planner planner(std::string(hcl::collKindName(c.kind)) + ":" + c.algorithm);
  planner.setPeerAccess(true);  // direct algorithms need it; the others ignore it
  planner.setPairingOrder(c.order);
  const hcl::ReduceSpec spec = specFor(c);
  std::vector<hcltest::SimRank> ranks(static_cast<size_t>(c.nranks));
  for (int r = 0; r < c.nranks; ++r) {
    RankIo& x = io[static_cast<size_t>(r)];
    hcl::CollArgs a;
    a.kind = c.kind;
    a.rank = r;
    a.nranks = c.nranks;
    a.count = c.count;
    a.type = c.num.type;
    a.loadIsIdentity = hcl::accumulatorSize(a.type) == hcl::dataTypeSize(a.type) && spec.kind != ReduceKind::PreMulSum;
    a.root = c.root;
    a.inPlace = x.send == x.recv;
    a.chunkBytes = c.chunkBytes;
    hcl::Schedule s = planner.plan(a);
    // In place, the window all-to-all is the direct one (window_copy.h).
    const bool directInstead = c.kind == CollKind::AlltoAll && a.inPlace && c.nranks > 1;
    if (s.algorithm != (directInstead ? std::string("direct") : std::string(c.algorithm))) {
      return "rank " + std::to_string(r) + " planned '" + s.algorithm + "'";
    }
    if (s.tag != static_cast<uint32_t>(c.kind)) {
      return "rank " + std::to_string(r) + " has tag " + std::to_string(s.tag);
    }
    const std::string misuse = checkBufferUse(s, x.sendBytes, x.recvBytes, c.num.type, c.nranks);
    if (!misuse.empty()) return "rank " + std::to_string(r) + ": " + misuse;
    ranks[static_cast<size_t>(r)] = {std::move(s), x.send, x.recv, spec, x.sendBytes, x.recvBytes, c.shareable,
                                     c.staged || r != 0};
  }
  const std::string outcome = hcltest::simulate(ranks);
  if (!outcome.empty() || c.algorithm != std::string("window")) return outcome;
  // Every rank took the branch the first rank proposed, or the direct one
  // where every buffer is shareable.
  const int want = c.staged && !c.shareable ? 1 : 0;
  for (const hcltest::SimRank& rank : ranks) {
    const auto& steps = rank.schedule.steps;
    const bool branches =
        std::any_of(steps.begin(), steps.end(), [](const hcl::Step& st) { return st.only != hcl::Only::Always; });
    if (branches && rank.tookStaged != want) return "a rank took staged=" + std::to_string(rank.tookStaged);
  }
  return "";
}

// The code element i of rank r's output must hold; nullopt where the output
// is unspecified.
using Expected = std::function<std::optional<uint64_t>(int rank, size_t i)>;

void runCall(const Call& c, const std::function<uint64_t(int, size_t)>& input, size_t outputCount,
             const Expected& expected) {
  std::vector<RankIo> io = makeBuffers(c, input);
  const std::string outcome = simulateCall(c, io);
  ASSERT_EQ(outcome, "") << describe(c);
  const size_t es = hcl::dataTypeSize(c.num.type);
  for (int r = 0; r < c.nranks; ++r) {
    for (size_t i = 0; i < outputCount; ++i) {
      const std::optional<uint64_t> want = expected(r, i);
      if (!want) continue;
      const uint64_t got = getCode(io[static_cast<size_t>(r)].recv, es, i);
      ASSERT_EQ(got, *want) << describe(c) << ": rank " << r << " element " << i;
    }
  }
}

struct Size {
  size_t count;
  size_t chunkBytes;
};

// Empty, one element, a few (several slices of a tiny chunk), a count that
// nranks does not divide (with a chunk no element size divides), and one
// that takes many pipeline slices.
std::vector<Size> sizesFor(int n) {
  return {{0, 4096}, {1, 4096}, {7, 16}, {3 * static_cast<size_t>(n) + 1, 24}, {1000, 64}};
}

std::vector<int> rootsFor(int n) {
  std::vector<int> roots;
  for (int root : {0, n - 1, n / 2, 1 % n}) {
    if (std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
  }
  return roots;
}

bool isRooted(CollKind k) { return k == CollKind::Broadcast || k == CollKind::Reduce; }
bool isReduction(CollKind k) {
  return k != CollKind::Broadcast && k != CollKind::AllGather && k != CollKind::AlltoAll;
}

// Every size, placement, root and data type of one collective.
// Only sizes up to `maxBytes` per rank's vector, for algorithms limited to them.
void runEveryCase(CollKind kind, const char* algorithm, int n, bool shareable = false, size_t maxBytes = SIZE_MAX,
                  bool staged = true, const std::vector<int>& order = {}) {
  const std::vector<int> roots = isRooted(kind) ? rootsFor(n) : std::vector<int>{0};
  const std::span<const Numeric> numerics = isReduction(kind) ? std::span<const Numeric>(kReductions)
                                                              : std::span<const Numeric>(kMovements);
  for (const Size& size : sizesFor(n)) {
    for (bool inPlace : {false, true}) {
      for (int root : roots) {
        for (const Numeric& num : numerics) {
          if (size.count * hcl::dataTypeSize(num.type) > maxBytes) continue;
          const Call c{kind, algorithm, n, size.count, size.chunkBytes, root, inPlace, num, shareable, staged, order};
          const size_t count = size.count;
          SCOPED_TRACE(describe(c));
          switch (kind) {
            case CollKind::AllReduce:
              runCall(c, [&](int r, size_t i) { return reductionInput(num.type, r, i); }, count,
                      [&](int, size_t i) { return reducedCode(num, n, i); });
              break;
            case CollKind::Reduce:
              runCall(c, [&](int r, size_t i) { return reductionInput(num.type, r, i); }, count,
                      [&](int r, size_t i) -> std::optional<uint64_t> {
                        if (r != root) return std::nullopt;
                        return reducedCode(num, n, i);
                      });
              break;
            case CollKind::ReduceScatter:
              runCall(c, [&](int r, size_t i) { return reductionInput(num.type, r, i); }, count,
                      [&](int r, size_t i) { return reducedCode(num, n, static_cast<size_t>(r) * count + i); });
              break;
            case CollKind::Broadcast:
              runCall(c, [&](int r, size_t i) { return movementInput(num.type, r, i); }, count,
                      [&](int, size_t i) { return movementInput(num.type, root, i); });
              break;
            case CollKind::AllGather:
              runCall(c, [&](int r, size_t i) { return movementInput(num.type, r, i); },
                      count * static_cast<size_t>(n),
                      [&](int, size_t i) { return movementInput(num.type, static_cast<int>(i / count), i % count); });
              break;
            case CollKind::AlltoAll:
              // Block q of rank r's output is block r of rank q's input.
              runCall(c, [&](int r, size_t i) { return movementInput(num.type, r, i); },
                      count * static_cast<size_t>(n), [&](int r, size_t i) {
                        return movementInput(num.type, static_cast<int>(i / count),
                                             static_cast<size_t>(r) * count + i % count);
                      });
              break;
            default: FAIL() << "no reference for " << hcl::collKindName(kind);
          }
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

class TreeRhd : public ::testing::TestWithParam<int> {};

TEST_P(TreeRhd, TreeAllReduce) { runEveryCase(CollKind::AllReduce, "tree", GetParam()); }
TEST_P(TreeRhd, TreeBroadcast) { runEveryCase(CollKind::Broadcast, "tree", GetParam()); }
TEST_P(TreeRhd, TreeReduce) { runEveryCase(CollKind::Reduce, "tree", GetParam()); }
TEST_P(TreeRhd, RhdAllReduce) { runEveryCase(CollKind::AllReduce, "rhd", GetParam()); }
TEST_P(TreeRhd, RhdReduceScatter) { runEveryCase(CollKind::ReduceScatter, "rhd", GetParam()); }
TEST_P(TreeRhd, RhdAllGather) { runEveryCase(CollKind::AllGather, "rhd", GetParam()); }
TEST_P(TreeRhd, DirectAllReduce) { runEveryCase(CollKind::AllReduce, "direct", GetParam()); }
// Staged through the shared windows (malloc buffers), and with every buffer
// shareable, where the same schedule runs the direct steps. Those also run
// on malloc buffers where the first rank proposes not to stage; the others'
// proposals do not count.
TEST_P(TreeRhd, WindowAllReduce) { runEveryCase(CollKind::AllReduce, "window", GetParam()); }
TEST_P(TreeRhd, WindowAllReduceShareable) { runEveryCase(CollKind::AllReduce, "window", GetParam(), true); }
TEST_P(TreeRhd, WindowAllReduceUnstaged) {
  runEveryCase(CollKind::AllReduce, "window", GetParam(), false, SIZE_MAX, false);
}
// All-gather and all-to-all staged the same way, and with their direct
// steps (in place, the all-to-all is the direct one).
TEST_P(TreeRhd, WindowAllGather) { runEveryCase(CollKind::AllGather, "window", GetParam()); }
TEST_P(TreeRhd, WindowAllGatherShareable) { runEveryCase(CollKind::AllGather, "window", GetParam(), true); }
TEST_P(TreeRhd, WindowAllGatherUnstaged) {
  runEveryCase(CollKind::AllGather, "window", GetParam(), false, SIZE_MAX, false);
}
TEST_P(TreeRhd, WindowAlltoAll) { runEveryCase(CollKind::AlltoAll, "window", GetParam()); }
TEST_P(TreeRhd, WindowAlltoAllShareable) { runEveryCase(CollKind::AlltoAll, "window", GetParam(), true); }
TEST_P(TreeRhd, WindowAlltoAllUnstaged) {
  runEveryCase(CollKind::AlltoAll, "window", GetParam(), false, SIZE_MAX, false);
}
TEST_P(TreeRhd, DirectAlltoAll) { runEveryCase(CollKind::AlltoAll, "direct", GetParam()); }
TEST_P(TreeRhd, FlatAllReduce) { runEveryCase(CollKind::AllReduce, "flat", GetParam(), false, 1024); }
TEST_P(TreeRhd, DirectReduceScatter) { runEveryCase(CollKind::ReduceScatter, "direct", GetParam()); }
TEST_P(TreeRhd, DirectReduce) { runEveryCase(CollKind::Reduce, "direct", GetParam()); }
TEST_P(TreeRhd, DirectAllGather) { runEveryCase(CollKind::AllGather, "direct", GetParam()); }
TEST_P(TreeRhd, DirectBroadcast) { runEveryCase(CollKind::Broadcast, "direct", GetParam()); }

// Ranks pinned to shared CPUs pair in an order of their places
// (core/host_cpus.h), which recursive doubling and the rhd all-gather
// follow. Such orders arise on power-of-two rank counts; recursive doubling
// takes any order (its folds included), rhd ignores one elsewhere.
std::vector<int> pairingOrderFor(int n) {
  switch (n) {
    case 2: return {1, 0};
    case 4: return {0, 1, 3, 2};
    case 8: return {3, 0, 2, 1, 7, 5, 4, 6};
    default: {
      std::vector<int> reversed;
      for (int r = n - 1; r >= 0; --r) reversed.push_back(r);
      return reversed;
    }
  }
}

TEST_P(TreeRhd, RdAllReduceInPairingOrder) {
  runEveryCase(CollKind::AllReduce, "rd", GetParam(), false, SIZE_MAX, true, pairingOrderFor(GetParam()));
}
TEST_P(TreeRhd, RhdAllReduceInPairingOrder) {
  runEveryCase(CollKind::AllReduce, "rhd", GetParam(), false, SIZE_MAX, true, pairingOrderFor(GetParam()));
}
TEST_P(TreeRhd, RhdReduceScatterInPairingOrder) {
  runEveryCase(CollKind::ReduceScatter, "rhd", GetParam(), false, SIZE_MAX, true, pairingOrderFor(GetParam()));
}
TEST_P(TreeRhd, RhdAllGatherInPairingOrder) {
  runEveryCase(CollKind::AllGather, "rhd", GetParam(), false, SIZE_MAX, true, pairingOrderFor(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(RankCounts, TreeRhd, ::testing::Range(1, kMaxRanks + 1),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// ---- Tree shapes ----------------------------------------------------------

// Checks that links(r) for r in [0, n) form one binary tree over all ranks
// with consistent parent and child links and logarithmic depth; returns its root.
int checkSpanningTree(int n, const std::function<hcl::TreeLinks(int)>& links, const std::string& what) {
  int root = -1;
  int maxDepth = 1;
  while ((1 << maxDepth) <= n) ++maxDepth;  // floor(log2 n) + 1 levels
  for (int r = 0; r < n; ++r) {
    const hcl::TreeLinks l = links(r);
    if (l.parent < 0) {
      EXPECT_EQ(root, -1) << what << ": two roots, " << root << " and " << r;
      root = r;
    } else {
      const hcl::TreeLinks up = links(l.parent);
      const bool listed = (up.numChildren > 0 && up.children[0] == r) || (up.numChildren > 1 && up.children[1] == r);
      EXPECT_TRUE(listed) << what << ": rank " << r << " is not a child of its parent " << l.parent;
    }
    for (int c = 0; c < l.numChildren; ++c) {
      const int child = l.children[static_cast<size_t>(c)];
      EXPECT_TRUE(child >= 0 && child < n && links(child).parent == r)
          << what << ": bad child " << child << " of " << r;
    }
    int depth = 1;
    for (int at = r; links(at).parent >= 0 && depth <= maxDepth; at = links(at).parent) ++depth;
    EXPECT_LE(depth, maxDepth) << what << ": rank " << r << " is too deep (or on a cycle)";
  }
  EXPECT_NE(root, -1) << what << ": no root";
  return root;
}

TEST(TreeShape, DoubleTreeSpansAllRanksAndNoRankIsInteriorInBoth) {
  for (int n = 1; n <= 64; ++n) {
    for (int t = 0; t < 2; ++t) {
      checkSpanningTree(n, [&](int r) { return hcl::doubleTreeLinks(t, r, n); },
                        "tree " + std::to_string(t) + " of " + std::to_string(n));
    }
    for (int r = 0; r < n; ++r) {
      const bool interior0 = hcl::doubleTreeLinks(0, r, n).numChildren > 0;
      const bool interior1 = hcl::doubleTreeLinks(1, r, n).numChildren > 0;
      EXPECT_FALSE(interior0 && interior1) << "rank " << r << " of " << n << " is interior in both trees";
    }
  }
}

TEST(TreeShape, RootedTreeHasTheRequestedRoot) {
  for (int n = 1; n <= 33; ++n) {
    for (int root = 0; root < n; ++root) {
      const std::string what = "root " + std::to_string(root) + " of " + std::to_string(n);
      EXPECT_EQ(checkSpanningTree(n, [&](int r) { return hcl::rootedTreeLinks(root, r, n); }, what), root) << what;
    }
  }
}

// ---- Registry and reference -------------------------------------------------

TEST(TreeRhdRegistry, SelectableButNeverTheDefault) {
  const hcl::Planner byDefault;
  const struct {
    CollKind kind;
    const char* name;
  } added[] = {{CollKind::AllReduce, "tree"},    {CollKind::Broadcast, "tree"},     {CollKind::Reduce, "tree"},
               {CollKind::AllReduce, "rhd"},     {CollKind::ReduceScatter, "rhd"}, {CollKind::AllGather, "rhd"}};
  for (const auto& e : added) {
    for (size_t bytes : {size_t{8}, size_t{1} << 30}) {
      EXPECT_STRNE(byDefault.algorithmFor(e.kind, bytes), e.name) << hcl::collKindName(e.kind) << " " << bytes;
      const hcl::Planner forced(std::string(hcl::collKindName(e.kind)) + ":" + e.name);
      EXPECT_STREQ(forced.algorithmFor(e.kind, bytes), e.name) << hcl::collKindName(e.kind) << " " << bytes;
    }
  }
}

// The float16 checks above can only catch a partial rounded to fp16 on its
// way if that changes results for these inputs; make sure it does, for Avg
// and for PreMulSum.
TEST(TreeRhdReference, HalfInputsExposeEarlyRounding) {
  for (const Numeric& num : {kReductions[2], kReductions[3]}) {
    const float scale = num.op == ReduceKind::PreMulSum ? kHalfScalar : 1.0f;
    for (int n = 3; n <= kMaxRanks; ++n) {
      size_t differing = 0;
      for (size_t i = 0; i < 1000; ++i) {
        float early = hcl::halfToFloat(hcl::floatToHalf(halfInput(0, i) * scale + halfInput(1, i) * scale));
        for (int r = 2; r < n; ++r) early += halfInput(r, i) * scale;
        if (num.op == ReduceKind::Avg) early /= static_cast<float>(n);
        if (hcl::floatToHalf(early) != reducedCode(num, n, i)) ++differing;
      }
      EXPECT_GT(differing, 0u) << num.name << ", " << n << " ranks";
    }
  }
}

}  // namespace
