// The hierarchical ("hier") algorithms, forced through the Planner, for 1..9
// ranks and many topologies (equal, unequal and interleaved groups, two
// levels, and the degenerate ones), on the in-memory simulator, checked
// element by element against a reference. Reductions run as int64 Sum and as
// float16 Avg and bfloat16 PreMulSum, whose inputs make an extra rounding,
// scaling or division show. Also: the bytes that cross the outer group
// boundary, and scratch that does not grow with the message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "collectives/algorithms/hierarchical.h"
#include "collectives/algorithms/ring.h"
#include "collectives/plan/plan.h"
#include "collectives/plan/topology.h"
#include "collectives/reduce/float_formats.h"
#include "schedule_simulator.h"

namespace {

using hcl::CollKind;
using hcl::ReduceKind;

constexpr int kMaxRanks = 9;
constexpr float kPreMulScalar = 3.0f;
constexpr const char* kForceHier = "allreduce:hier;reducescatter:hier;allgather:hier;broadcast:hier;reduce:hier";

// ---- Topologies -----------------------------------------------------------

// Group ids renumbered in order of each group's lowest rank (the contract of
// Topology::levels).
std::vector<int> renumbered(const std::vector<int>& ids) {
  std::map<int, int> fresh;
  std::vector<int> out;
  for (int id : ids) out.push_back(fresh.try_emplace(id, static_cast<int>(fresh.size())).first->second);
  return out;
}

std::vector<int> byRank(int n, int (*groupOf)(int rank)) {
  std::vector<int> ids;
  for (int r = 0; r < n; ++r) ids.push_back(groupOf(r));
  return renumbered(ids);
}

// Consecutive groups whose sizes cycle through `sizes`.
std::vector<int> bySizes(int n, const std::vector<int>& sizes) {
  std::vector<int> ids;
  for (int g = 0; static_cast<int>(ids.size()) < n; ++g)
    for (int k = 0; k < sizes[static_cast<size_t>(g) % sizes.size()] && static_cast<int>(ids.size()) < n; ++k)
      ids.push_back(g);
  return ids;
}

// Groups of level-0 groups: every `hostsPerFabric` consecutive ids together.
std::vector<int> outerOf(const std::vector<int>& inner, int hostsPerFabric) {
  std::vector<int> ids;
  for (int g : inner) ids.push_back(g / hostsPerFabric);
  return renumbered(ids);
}

struct NamedTopology {
  std::string name;
  std::optional<hcl::Topology> topology;  // none: a null pointer
};

std::vector<NamedTopology> topologiesFor(int n) {
  std::vector<NamedTopology> t;
  const auto one = [](std::vector<int> level) { return hcl::Topology{{std::move(level)}}; };
  t.push_back({"null", std::nullopt});
  t.push_back({"empty", hcl::Topology{}});
  t.push_back({"singletons", one(byRank(n, [](int r) { return r; }))});
  t.push_back({"one group", one(byRank(n, [](int) { return 0; }))});
  t.push_back({"pairs", one(byRank(n, [](int r) { return r / 2; }))});
  t.push_back({"triples", one(byRank(n, [](int r) { return r / 3; }))});
  t.push_back({"sizes 3,2,1", one(bySizes(n, {3, 2, 1}))});
  t.push_back({"sizes 1,4", one(bySizes(n, {1, 4}))});
  t.push_back({"r%2", one(byRank(n, [](int r) { return r % 2; }))});
  t.push_back({"r%3", one(byRank(n, [](int r) { return r % 3; }))});
  const std::vector<int> pairs = byRank(n, [](int r) { return r / 2; });
  t.push_back({"pairs in fours", hcl::Topology{{pairs, outerOf(pairs, 2)}}});
  const std::vector<int> uneven = bySizes(n, {2, 3, 1});
  t.push_back({"sizes 2,3,1 in twos", hcl::Topology{{uneven, outerOf(uneven, 2)}}});
  t.push_back({"r%4 in r%2", hcl::Topology{{byRank(n, [](int r) { return r % 4; }),
                                            byRank(n, [](int r) { return r % 2; })}}});
  const std::vector<int> singles = byRank(n, [](int r) { return r; });
  t.push_back({"singletons in one", hcl::Topology{{singles, byRank(n, [](int) { return 0; })}}});
  t.push_back({"triples twice, bad level", hcl::Topology{{byRank(n, [](int r) { return r / 3; }),
                                                          byRank(n, [](int r) { return r / 3; }),
                                                          std::vector<int>(static_cast<size_t>(n) + 1, 0)}}});
  return t;
}

// ---- Numbers --------------------------------------------------------------

struct Numeric {
  const char* name;
  hclDataType_t type;
  ReduceKind op;
};

constexpr Numeric kInt64Sum{"int64 sum", hclInt64, ReduceKind::Sum};
constexpr Numeric kHalfAvg{"float16 avg", hclFloat16, ReduceKind::Avg};
constexpr Numeric kBf16PreMul{"bfloat16 premulsum", hclBfloat16, ReduceKind::PreMulSum};
constexpr Numeric kReductions[] = {kInt64Sum, kHalfAvg, kBf16PreMul};
constexpr Numeric kMovements[] = {{"int64", hclInt64, ReduceKind::Sum}, {"float16", hclFloat16, ReduceKind::Sum}};

int64_t intInput(int rank, size_t i) { return int64_t{rank} * 1000003 + static_cast<int64_t>(i) * 7 - 5000; }

// Rank offsets that sum to zero (halves when n is even) on values in
// [600, 1000): every input is exact in fp16, the average is exactly the base,
// and partial sums of two or more ranks are not fp16 values.
float halfInput(int rank, int n, size_t i) {
  return 600.0f + static_cast<float>(i * 37 % 400) + static_cast<float>(rank) - 0.5f * static_cast<float>(n - 1);
}

// Integers in [-200, 200]: exact in bf16, and so are three times them in
// fp32, but their sums need more than bf16's 8 bits.
float bf16Input(int rank, size_t i) {
  return static_cast<float>(static_cast<int>((i * 53 + static_cast<size_t>(rank) * 97) % 401) - 200);
}

uint64_t reductionInput(const Numeric& num, int rank, int n, size_t i) {
  switch (num.type) {
    case hclInt64: return static_cast<uint64_t>(intInput(rank, i));
    case hclFloat16: return hcl::floatToHalf(halfInput(rank, n, i));
    default: return hcl::floatToBf16(bf16Input(rank, i));
  }
}

// Element i reduced over n ranks as the kernels define it: scale on load, sum
// exactly in fp32, divide and round once.
uint64_t reducedCode(const Numeric& num, int n, size_t i) {
  if (num.type == hclInt64) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += intInput(r, i);
    return static_cast<uint64_t>(sum);
  }
  double sum = 0;  // exact: every partial fits fp32's 24 bits
  for (int r = 0; r < n; ++r)
    sum += num.type == hclFloat16 ? halfInput(r, n, i) : kPreMulScalar * bf16Input(r, i);
  if (num.type == hclFloat16) return hcl::floatToHalf(static_cast<float>(sum) / static_cast<float>(n));
  return hcl::floatToBf16(static_cast<float>(sum));
}

uint64_t movementInput(int rank, size_t i) { return static_cast<uint64_t>(rank) * 1000003 + i * 7 + 1; }

hcl::ReduceSpec specFor(const Numeric& num, int n) {
  hcl::ReduceSpec s;
  s.type = num.type;
  s.kind = num.op;
  s.scalarFloat = kPreMulScalar;
  s.nranks = n;
  return s;
}

// Little-endian element storage of any width.
struct Buffer {
  std::vector<unsigned char> bytes;
  size_t elemBytes;
  Buffer(size_t elems, size_t elemBytes, unsigned char fill) : bytes(elems * elemBytes, fill), elemBytes(elemBytes) {}
  void put(size_t i, uint64_t v) { std::memcpy(bytes.data() + i * elemBytes, &v, elemBytes); }
  uint64_t get(size_t i) const {
    uint64_t v = 0;
    std::memcpy(&v, bytes.data() + i * elemBytes, elemBytes);
    return v;
  }
  unsigned char* at(size_t i) { return bytes.data() + i * elemBytes; }
};

constexpr unsigned char kUntouched = 0xA5;

// ---- One collective on the simulator --------------------------------------

struct Call {
  CollKind kind;
  int n;
  const hcl::Topology* topology;
  size_t count;
  size_t chunkBytes;
  int root;
  bool inPlace;
  Numeric num;
};

std::string describe(const Call& c, const std::string& topologyName) {
  return std::string(hcl::collKindName(c.kind)) + " " + c.num.name + " n=" + std::to_string(c.n) + " topology '" +
         topologyName + "' count=" + std::to_string(c.count) + " chunk=" + std::to_string(c.chunkBytes) +
         " root=" + std::to_string(c.root) + (c.inPlace ? " in place" : " out of place");
}

hcl::CollArgs argsFor(const Call& c, int rank) {
  hcl::CollArgs a;
  a.kind = c.kind;
  a.rank = rank;
  a.nranks = c.n;
  a.count = c.count;
  a.type = c.num.type;
  a.root = c.root;
  a.chunkBytes = c.chunkBytes;
  a.topology = c.topology;
  a.loadIsIdentity = hcl::accumulatorSize(c.num.type) == hcl::dataTypeSize(c.num.type) &&
                     c.num.op != ReduceKind::PreMulSum;
  return a;
}

bool reduces(CollKind k) { return k == CollKind::AllReduce || k == CollKind::ReduceScatter || k == CollKind::Reduce; }

size_t inputElems(const Call& c) {
  return c.kind == CollKind::ReduceScatter ? c.count * static_cast<size_t>(c.n) : c.count;
}
size_t outputElems(const Call& c) {
  return c.kind == CollKind::AllGather ? c.count * static_cast<size_t>(c.n) : c.count;
}

// The expected element i of rank r's output, or nullopt where nothing is promised.
std::optional<uint64_t> expected(const Call& c, int r, size_t i) {
  const size_t count = std::max<size_t>(1, c.count);
  switch (c.kind) {
    case CollKind::AllReduce: return reducedCode(c.num, c.n, i);
    case CollKind::ReduceScatter: return reducedCode(c.num, c.n, static_cast<size_t>(r) * c.count + i);
    case CollKind::Reduce:
      if (r != c.root) return std::nullopt;
      return reducedCode(c.num, c.n, i);
    case CollKind::AllGather: return movementInput(static_cast<int>(i / count), i % count);
    case CollKind::Broadcast: return movementInput(c.root, i);
    default: return std::nullopt;
  }
}

// Runs the call and returns "" or what went wrong.
std::string run(const Call& c) {
  const hcl::Planner planner(kForceHier);
  const size_t es = hcl::dataTypeSize(c.num.type);
  const size_t n = static_cast<size_t>(c.n);
  // In place: one buffer per rank laid out as NCCL does (the input at
  // rank * count of the output for allgather, the output at rank * count of
  // the input for reduce-scatter).
  std::vector<Buffer> send, recv;
  std::vector<hcltest::SimRank> ranks(n);
  for (size_t r = 0; r < n; ++r) {
    const int rank = static_cast<int>(r);
    const size_t inElems = inputElems(c), outElems = outputElems(c);
    send.emplace_back(std::max(inElems, outElems), es, kUntouched);
    recv.emplace_back(outElems, es, kUntouched);
    Buffer& input = c.inPlace ? (c.kind == CollKind::AllGather ? recv[r] : send[r]) : send[r];
    const size_t inputAt = c.inPlace && c.kind == CollKind::AllGather ? r * c.count : 0;
    for (size_t i = 0; i < inElems; ++i)
      input.put(inputAt + i, reduces(c.kind) ? reductionInput(c.num, rank, c.n, i) : movementInput(rank, i));
  }
  for (size_t r = 0; r < n; ++r) {
    void* out = recv[r].at(0);
    const void* in = send[r].at(0);
    if (c.inPlace && c.kind == CollKind::AllGather) in = recv[r].at(r * c.count);
    if (c.inPlace && c.kind == CollKind::ReduceScatter) out = send[r].at(r * c.count);
    if (c.inPlace && c.kind != CollKind::AllGather && c.kind != CollKind::ReduceScatter) out = send[r].at(0);
    hcl::CollArgs a = argsFor(c, static_cast<int>(r));
    a.inPlace = in == out;
    ranks[r] = {planner.plan(a), in, out, specFor(c.num, c.n)};
    if (ranks[r].schedule.algorithm != "hier") return "the planner chose " + ranks[r].schedule.algorithm;
  }
  std::vector<Buffer> sentBefore = send;
  const std::string error = hcltest::simulate(ranks);
  if (!error.empty()) return error;
  for (size_t r = 0; r < n && !c.inPlace; ++r)
    if (send[r].bytes != sentBefore[r].bytes) return "rank " + std::to_string(r) + " wrote its send buffer";
  for (size_t r = 0; r < n; ++r) {
    const auto* out = static_cast<const unsigned char*>(ranks[r].recv);
    for (size_t i = 0; i < outputElems(c); ++i) {
      uint64_t got = 0;
      std::memcpy(&got, out + i * es, es);
      std::optional<uint64_t> want = expected(c, static_cast<int>(r), i);
      if (!want) {  // a non-root of Reduce: its buffer is left as it was
        want = c.inPlace ? reductionInput(c.num, static_cast<int>(r), c.n, i) : Buffer(1, es, kUntouched).get(0);
      }
      if (es < sizeof(uint64_t)) *want &= (uint64_t{1} << (8 * es)) - 1;  // the stored width
      if (got != *want) {
        return "rank " + std::to_string(r) + " element " + std::to_string(i) + ": got " + std::to_string(got) +
               ", want " + std::to_string(*want);
      }
    }
  }
  return "";
}

std::vector<int> rootsFor(int n) {
  std::vector<int> roots{0, n - 1, n / 2};
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

struct Size {
  size_t count, chunkBytes;
};

// 0, 1, 7, one not divisible by n, and one that takes many slices.
std::vector<Size> sizesFor(int n) {
  return {{0, 4096}, {1, 4096}, {7, 4096}, {static_cast<size_t>(n) * 11 + 1, 4096}, {600, 32}};
}

class Hierarchical : public ::testing::TestWithParam<int> {};

void runEverywhere(int n, CollKind kind, std::initializer_list<Numeric> numerics, bool withRoots) {
  for (const NamedTopology& t : topologiesFor(n)) {
    const hcl::Topology* topology = t.topology ? &*t.topology : nullptr;
    for (const Size& size : sizesFor(n))
      for (const Numeric& num : numerics)
        for (int root : withRoots ? rootsFor(n) : std::vector<int>{0})
          for (bool inPlace : {false, true}) {
            const Call c{kind, n, topology, size.count, size.chunkBytes, root, inPlace, num};
            ASSERT_EQ(run(c), "") << describe(c, t.name);
          }
  }
}

TEST_P(Hierarchical, AllReduce) {
  runEverywhere(GetParam(), CollKind::AllReduce, {kInt64Sum, kHalfAvg, kBf16PreMul}, false);
}

TEST_P(Hierarchical, ReduceScatter) {
  runEverywhere(GetParam(), CollKind::ReduceScatter, {kInt64Sum, kHalfAvg, kBf16PreMul}, false);
}

TEST_P(Hierarchical, Reduce) {
  runEverywhere(GetParam(), CollKind::Reduce, {kInt64Sum, kHalfAvg, kBf16PreMul}, true);
}

TEST_P(Hierarchical, AllGather) {
  runEverywhere(GetParam(), CollKind::AllGather, {kMovements[0], kMovements[1]}, false);
}

TEST_P(Hierarchical, Broadcast) {
  runEverywhere(GetParam(), CollKind::Broadcast, {kMovements[0], kMovements[1]}, true);
}

INSTANTIATE_TEST_SUITE_P(RankCounts, Hierarchical, ::testing::Range(1, kMaxRanks + 1),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// Any partition at any level works, nested or not, numbered or not: every
// level only splits the set of ranks the level below handed it.
TEST(HierarchicalRandom, ArbitraryPartitions) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 12);
    hcl::Topology topology;
    const size_t levels = rng() % 4;
    for (size_t l = 0; l < levels; ++l) {
      const int groups = 1 + static_cast<int>(rng() % static_cast<unsigned>(n));
      std::vector<int> ids;
      for (int r = 0; r < n; ++r) ids.push_back(static_cast<int>(rng() % static_cast<unsigned>(groups)) * 3);
      topology.levels.push_back(ids);
    }
    const size_t count = rng() % 50;
    const size_t chunkBytes = 8u << (rng() % 4);
    const int root = static_cast<int>(rng() % static_cast<unsigned>(n));
    const bool inPlace = rng() % 2 == 1;
    for (CollKind kind : {CollKind::AllReduce, CollKind::ReduceScatter, CollKind::Reduce, CollKind::AllGather,
                          CollKind::Broadcast}) {
      const Numeric num = reduces(kind) ? (trial % 2 ? kHalfAvg : kBf16PreMul) : kMovements[trial % 2];
      const Call c{kind, n, &topology, count, chunkBytes, root, inPlace, num};
      std::string levelsText;
      for (const auto& level : topology.levels) {
        levelsText += " [";
        for (int g : level) levelsText += std::to_string(g) + " ";
        levelsText += "]";
      }
      ASSERT_EQ(run(c), "") << describe(c, "random" + levelsText);
    }
  }
}

// ---- Structure --------------------------------------------------------------

// Bytes each rank sends to a rank of another group of `outer`.
std::vector<size_t> bytesAcross(const std::vector<hcl::Schedule>& schedules, const std::vector<int>& outer) {
  std::vector<size_t> bytes(schedules.size(), 0);
  for (size_t r = 0; r < schedules.size(); ++r)
    for (const hcl::Step& s : schedules[r].steps)
      if (s.kind == hcl::Step::Kind::Send && outer[static_cast<size_t>(s.peer)] != outer[r]) bytes[r] += s.bytes;
  return bytes;
}

std::vector<hcl::Schedule> schedulesOf(hcl::Schedule (*generate)(const hcl::CollArgs&), hcl::CollArgs a) {
  std::vector<hcl::Schedule> out;
  for (int r = 0; r < a.nranks; ++r) {
    a.rank = r;
    out.push_back(generate(a));
  }
  return out;
}

struct Layout {
  const char* name;
  int n;
  hcl::Topology topology;
  int outerGroupSize;  // ranks per group of the outermost level
  size_t groups() const { return static_cast<size_t>(n / outerGroupSize); }
};

std::vector<int> contiguous(int n, int size) {
  std::vector<int> ids;
  for (int r = 0; r < n; ++r) ids.push_back(r / size);
  return ids;
}

const Layout kEqualLayouts[] = {
    {"2 hosts of 4", 8, {{contiguous(8, 4)}}, 4},
    {"3 hosts of 3", 9, {{contiguous(9, 3)}}, 3},
    {"4 hosts of 4", 16, {{contiguous(16, 4)}}, 4},
    {"hosts of 2 in 2 fabrics of 4", 8, {{contiguous(8, 2), contiguous(8, 4)}}, 4},
    {"hosts of 4 in 2 fabrics of 8", 16, {{contiguous(16, 4), contiguous(16, 8)}}, 8},
};

// Bytes each rank sends across the outermost boundary with the hierarchical
// algorithm and with the flat ring. Returns the hierarchical per-rank figure
// after checking that every rank carries the same share, at most
// 1/groupSize of what the ring's boundary ranks send, and that together
// they send no more than the ring.
size_t outerBytesPerRank(const Layout& l, CollKind kind, hcl::Schedule (*hierarchical)(const hcl::CollArgs&),
                         hcl::Schedule (*ring)(const hcl::CollArgs&), size_t count) {
  hcl::CollArgs a;
  a.kind = kind;
  a.nranks = l.n;
  a.count = count;
  a.type = hclInt64;
  a.chunkBytes = 4096;
  a.topology = &l.topology;
  const std::vector<int>& outer = l.topology.levels.back();
  const auto hier = bytesAcross(schedulesOf(hierarchical, a), outer);
  const auto flat = bytesAcross(schedulesOf(ring, a), outer);
  const size_t hierMax = *std::max_element(hier.begin(), hier.end());
  const size_t hierMin = *std::min_element(hier.begin(), hier.end());
  const size_t flatMax = *std::max_element(flat.begin(), flat.end());
  const size_t hierTotal = std::accumulate(hier.begin(), hier.end(), size_t{0});
  const size_t flatTotal = std::accumulate(flat.begin(), flat.end(), size_t{0});
  std::printf("%-13s %-29s per rank across the outer boundary: hier %zu (min %zu), flat ring max %zu, "
              "ratio %.4f (1/groupSize %.4f); all ranks: hier %zu, flat %zu\n",
              hcl::collKindName(kind), l.name, hierMax, hierMin, flatMax,
              static_cast<double>(hierMax) / static_cast<double>(flatMax), 1.0 / l.outerGroupSize, hierTotal,
              flatTotal);
  EXPECT_EQ(hierMin, hierMax) << l.name;
  EXPECT_LE(static_cast<double>(hierMax), static_cast<double>(flatMax) / l.outerGroupSize * 1.01) << l.name;
  EXPECT_LE(hierTotal, flatTotal) << l.name;
  return hierMax;
}

TEST(HierarchicalStructure, OuterLinksCarryAboutOneGroupSizeth) {
  constexpr size_t kCount = 73728;  // whole segments of 512 * n elements for every n here
  for (const Layout& l : kEqualLayouts) {
    const size_t perRank = outerBytesPerRank(l, CollKind::AllReduce, hcl::hierAllReduce, hcl::ringAllReduce, kCount);
    // Exactly what a ring allreduce of one shard among the groups sends.
    const size_t shard = kCount / static_cast<size_t>(l.outerGroupSize);
    EXPECT_EQ(perRank, 2 * (l.groups() - 1) * shard / l.groups() * sizeof(int64_t)) << l.name;
  }
}

TEST(HierarchicalStructure, GatherAndScatterCrossTheOuterLinksOnce) {
  constexpr size_t kCount = 8192;  // per rank
  for (const Layout& l : kEqualLayouts) {
    // Each rank exchanges only its own block with its peers in the other groups.
    const size_t want = (l.groups() - 1) * kCount * sizeof(int64_t);
    EXPECT_EQ(outerBytesPerRank(l, CollKind::AllGather, hcl::hierAllGather, hcl::ringAllGather, kCount), want)
        << l.name;
    EXPECT_EQ(
        outerBytesPerRank(l, CollKind::ReduceScatter, hcl::hierReduceScatter, hcl::ringReduceScatter, kCount),
        want)
        << l.name;
  }
}

TEST(HierarchicalStructure, ScratchDoesNotGrowWithTheMessage) {
  const hcl::Topology topology{{bySizes(8, {3, 2, 3})}};  // unequal: extras fold into owners
  for (auto generate : {hcl::hierAllReduce, hcl::hierReduceScatter, hcl::hierReduce}) {
    size_t scratch[2] = {0, 0};
    for (size_t k = 0; k < 2; ++k) {
      hcl::CollArgs a;
      a.kind = CollKind::AllReduce;  // the tag only
      a.nranks = 8;
      a.count = k == 0 ? (1 << 14) : (1 << 18);
      a.type = hclFloat16;
      a.loadIsIdentity = false;
      a.chunkBytes = 1024;
      a.topology = &topology;
      for (int r = 0; r < a.nranks; ++r) {
        a.rank = r;
        scratch[k] = std::max(scratch[k], generate(a).scratchBytes);
      }
    }
    EXPECT_EQ(scratch[0], scratch[1]);
    EXPECT_LE(scratch[1], size_t{64} * 1024);  // a few slices per rank, far below the 512 KiB message
  }
}

TEST(HierarchicalStructure, RegisteredAfterTheDefaults) {
  const hcl::Planner defaults;
  const hcl::Planner forced(kForceHier);
  for (CollKind k : {CollKind::AllReduce, CollKind::ReduceScatter, CollKind::AllGather, CollKind::Broadcast,
                     CollKind::Reduce}) {
    EXPECT_STRNE(defaults.algorithmFor(k), "hier") << hcl::collKindName(k);
    EXPECT_STREQ(forced.algorithmFor(k), "hier") << hcl::collKindName(k);
  }
}

}  // namespace
