// Every algorithm, one line each. For each message the first entry of its
// collective that admits the size (and the communicator) is the default.
#include "collectives/algorithms/direct_access.h"
#include "collectives/algorithms/flat.h"
#include "collectives/algorithms/hierarchical.h"
#include "collectives/algorithms/pairwise.h"
#include "collectives/algorithms/recursive_doubling.h"
#include "collectives/algorithms/rhd.h"
#include "collectives/algorithms/ring.h"
#include "collectives/algorithms/tree.h"
#include "collectives/algorithms/window.h"
#include "collectives/algorithms/window_copy.h"
#include "collectives/plan/plan.h"
#include "core/host_cpus.h"

namespace hcl {

// Below this size the two extra messages of a direct schedule cost more than
// the copies they save (docs/performance.md).
constexpr size_t kDirectFrom = 64 * 1024;
// A direct allreduce has each rank reduce one shard: it pays once a shard
// holds 8 KiB (2 ranks, 32 KiB: 4.3 against 6.5 us for the ring; 4 ranks on
// 2 cores: level with the ring at 32 KiB), and so does a direct
// reduce-scatter from 16 KiB per rank (2 ranks: 2.8 against 3.5 us at
// 16 KiB). Where ranks share CPUs the direct reduce-scatter starts at
// 32 KiB blocks, with messages below (us per call at 16 KiB blocks, direct
// against messages, pinned alternately to the 2 cores: 3 ranks 19.7 against
// 13.3, 4 ranks 27.2 against 12.9, 6 ranks 68.9 against 44.4, 8 ranks 124
// against 58; at 32 KiB, 4 ranks 40 against recursive halving and
// doubling's 48, the same while the host runs the vCPUs apart).
constexpr size_t kDirectShardFrom = 8 * 1024;
constexpr size_t kDirectReduceScatterFrom = 16 * 1024, kDirectReduceScatterSharedCpusFrom = 32 * 1024;
// A reduce's non-roots write their shards to the root: one more system call
// each, which the chain to the root beats at 64 KiB (2 ranks: 4.7 vs 5.5 us).
// Where ranks share CPUs, the direct broadcast and reduce start only at
// kSharedCpusSingleCopyFrom (core/host_cpus.h).
constexpr size_t kDirectReduceFrom = 128 * 1024;
// On AMD EPYC (Zen 4, 2 ranks pinned, µs per call) the ring is ahead below
// 256 KiB: 96 KiB 10.5 against 12.8, 128 KiB 13.5 against 15.6; level at
// 256 and 512 KiB (25.0-27.1 against 25.9-26.3, and 48.6-59.8 against
// 53.5-54.1, from run to run), direct ahead from 1 MiB (98.8 against 109.3).
constexpr FamilyAdmission kDirectReduceOnAmd[] = {{.family = CpuFamily::Amd, .minBytes = 256u << 10}};
// All-gather and all-to-all move each block once with no reduction, so the
// pull pays from smaller blocks (sizes here are per rank; measured on
// 2 ranks: 1.1-1.4x the message-based algorithms from 8 KiB).
constexpr size_t kDirectCopyFrom = 8 * 1024;
// On AMD EPYC (Zen 4, 2 ranks) the message-based algorithms are twice as
// fast at 8 KiB blocks (all-gather 1.55 against 3.18 us, all-to-all 1.60
// against 3.15), and the pull pays from 16 KiB (all-gather 3.9 against
// 5.5 us; all-to-all level, 3.9 against 3.5).
constexpr size_t kDirectCopyFromOnAmd = 16 * 1024;
// One round of n-1 messages for tiny messages on a few ranks, where each
// rank has a CPU of its own. Ranks that share CPUs yield while they wait, and
// a round that needs every peer to have run costs more than log2(n) rounds
// that each need one: 4 ranks pinned two per core, 8-256 B, 2.5-2.9 us with
// recursive doubling against 2.9-3.0 flat, whichever ranks share a core
// (docs/performance.md).
constexpr size_t kFlatUpTo = 1024;
constexpr int kFlatMaxRanks = 8;
// From here the data no longer stays in cache between calls, and staging
// through shared windows beats the kernel's copies (docs/performance.md):
// where all ranks' buffers on the host weigh 64 MiB, and never below 16 MiB.
// On 2 ranks that is 32 MiB (at 16 MiB direct did 9.6 GB/s, the window 7.3);
// on 4 ranks, 16 MiB.
constexpr size_t kWindowFrom = 16u << 20;
constexpr size_t kWindowFromTotal = 64u << 20;
constexpr size_t kNever = SIZE_MAX;
// On AMD EPYC (Zen 4) the window is ahead from 256 KiB where every rank has
// a CPU of its own (2 ranks, malloc buffers: 18-19 GB/s against direct's
// 10.4-10.7 at 256-512 KiB, level at 128 KiB), once its results stay in
// cache below 8 MiB and small windows rotate (window.cc). Runs measure
// whether staging still pays, as it does not while the host runs the two
// vCPUs apart, and go straight between the buffers instead
// (core/staging_choice.h). Where ranks share CPUs it is ahead from 32 KiB,
// where recursive doubling stops: 4 ranks on 2 cores took 21 against 24.5 us
// for recursive doubling and 44 for the direct algorithm at 32 KiB, and
// 0.43-0.65x the direct algorithm's time from 64 KiB to 64 MiB pinned two
// per core (to 16 MiB placed by the kernel) while the host keeps the vCPUs
// close; direct's system calls cost more than the window's messages there.
// Where it does not, staging loses from 4 MiB pinned and from 128 KiB
// unpinned, and the staging choice goes straight. Measured with 3, 4 and 8
// ranks (docs/performance.md).
constexpr FamilyAdmission kWindowOnAmd[] = {
    {.family = CpuFamily::Amd, .minBytes = 256u << 10, .minTotalBytes = 0, .minBytesSharedCpus = 32u << 10}};

// All-gather and all-to-all through windows (window_copy.h) pay on AMD EPYC
// (Zen 4) from 128 KiB blocks, where every rank has a CPU of its own
// (2 ranks, malloc buffers, staged algbw against the direct algorithms':
// all-gather 22.5-23.5 against 18.9-19.2 GB/s at 128 KiB blocks, 25-26
// against 18-20 at 256-512 KiB; all-to-all 23-24 against 15-19 at 128 KiB,
// 25-26 against 19 at 256 KiB; at 64 KiB blocks both 13 against 16). Where
// ranks share CPUs (4 ranks on 2 cores, time per call against direct's),
// the all-gather pays from 32 KiB blocks (0.63-0.85x the direct pull's time
// from there to 4 MiB blocks, but 1.05-1.2x at 1 MiB; 6 and 8 ranks, 32 KiB
// blocks: 45 and 80 us against recursive halving and doubling's 66 and 87),
// and the all-to-all from 64 KiB. Below that messages beat both the window
// and the direct pull there, time per call, window (or pull) against
// messages: all-to-all, pairwise, 3 ranks pinned 0,1,0, 32-128 KiB calls
// 17-32 against 9.6-21 us; 4 ranks pinned 0,1,0,1, 64-256 KiB 18-38 against
// 12-33; 8 ranks, 128-256 KiB 77-193 against 53-99; at 64 KiB blocks level
// on 3 and 4 ranks and the window ahead on 8 (258 against 311 us).
// All-gather, recursive halving and doubling, 16 KiB blocks: 3 ranks 18.2
// (pull) against 12.7; 4 ranks 29 against 10.5, and 29 against 24 while the
// host runs the vCPUs apart; 6 ranks 64 against 37; 8 ranks 114 against 47,
// and 140 against 68 with the vCPUs apart. Runs measure whether staging
// pays, as for the window all-reduce. Not measured on other families: there
// they run where HCL_ALGO names them.
constexpr size_t kWindowAllGatherSharedCpusOnAmd = 32u << 10, kWindowAlltoAllSharedCpusOnAmd = 64u << 10;
constexpr FamilyAdmission kWindowAllGatherOnAmd[] = {{.family = CpuFamily::Amd,
                                                      .minBytes = 128u << 10,
                                                      .minTotalBytes = 0,
                                                      .minBytesSharedCpus = kWindowAllGatherSharedCpusOnAmd}};
constexpr FamilyAdmission kWindowAlltoAllOnAmd[] = {{.family = CpuFamily::Amd,
                                                     .minBytes = 128u << 10,
                                                     .minTotalBytes = 0,
                                                     .minBytesSharedCpus = kWindowAlltoAllSharedCpusOnAmd}};
// The direct pulls from kDirectCopyFromOnAmd, but where ranks share CPUs only
// where the windows take over anyway: messages run below them.
constexpr FamilyAdmission kDirectAllGatherOnAmd[] = {{.family = CpuFamily::Amd,
                                                      .minBytes = kDirectCopyFromOnAmd,
                                                      .minTotalBytes = 0,
                                                      .minBytesSharedCpus = kWindowAllGatherSharedCpusOnAmd}};
constexpr FamilyAdmission kDirectAlltoAllOnAmd[] = {{.family = CpuFamily::Amd,
                                                     .minBytes = kDirectCopyFromOnAmd,
                                                     .minTotalBytes = 0,
                                                     .minBytesSharedCpus = kWindowAlltoAllSharedCpusOnAmd}};

// Where ranks share CPUs each step of a schedule waits for a peer that may
// not be running. On a power-of-two count below 64 KiB blocks, the log2(n)
// steps of recursive halving and doubling beat the ring's n-1 (us per call,
// rhd against ring, 4 ranks, fast and with the vCPUs apart: all-gather, 16 KiB
// blocks, pinned two per core 10.5 against 21 and 24 against 62, placed by
// the kernel 13.6 against 18.6; reduce-scatter, 8 KiB blocks, pinned 15.3
// against 13.1 and 15.3 against 35, placed by the kernel 14.2 against 13.1;
// 16 KiB 15.1 against 23.2 placed by the kernel; 8 ranks: all-gather 30.8
// against 49.9 at 8 KiB blocks and 47 against 57 at 16 KiB, reduce-scatter
// 37.7 against 56.5 and 58.7 against 72.8). On other counts rhd adds two
// steps for the ranks beyond the power of two and the link-cost model
// chooses (3 ranks: level to 64 KiB blocks, then all-gather 45 against 106
// and reduce-scatter 60 against 100 at 128 KiB; 6 ranks: ring ahead or
// level). On one host the hierarchical algorithms run the ring, and the
// same holds for them (4 ranks, reduce-scatter, 16 KiB blocks: 22.7 against
// rhd's 13.2).
constexpr size_t kRingSharedCpusPowerOfTwoFrom = 64u << 10;

std::span<const AlgorithmEntry> algorithmTable() {
  static const AlgorithmEntry table[] = {
      {CollKind::AllReduce, "flat", flatAllReduce, kFlatUpTo, 0, false, kFlatMaxRanks, 0, 0, true},
      {CollKind::AllReduce, "rd", recursiveDoublingAllReduce, 16 * 1024},
      {.kind = CollKind::AllReduce, .name = "window", .generate = windowAllReduce, .maxBytes = 0,
       .minBytes = kWindowFrom, .needsPeerAccess = true, .minTotalBytes = kWindowFromTotal, .byFamily = kWindowOnAmd},
      {CollKind::AllReduce, "direct", directAllReduce, 0, 0, true, 0, 0, kDirectShardFrom},
      {CollKind::AllReduce, "ring", ringAllReduce, 0},
      {CollKind::AllReduce, "tree", treeAllReduce, 0},
      {CollKind::AllReduce, "rhd", rhdAllReduce, 0},
      {CollKind::AllReduce, "hier", hierAllReduce, 0},
      {.kind = CollKind::ReduceScatter, .name = "direct", .generate = directReduceScatter, .maxBytes = 0,
       .minBytes = kDirectReduceScatterFrom, .needsPeerAccess = true,
       .minBytesSharedCpus = kDirectReduceScatterSharedCpusFrom},
      {.kind = CollKind::ReduceScatter, .name = "ring", .generate = ringReduceScatter, .maxBytes = 0,
       .minBytesSharedCpusPowerOfTwo = kRingSharedCpusPowerOfTwoFrom},
      {CollKind::ReduceScatter, "rhd", rhdReduceScatter, 0},
      {.kind = CollKind::ReduceScatter, .name = "hier", .generate = hierReduceScatter, .maxBytes = 0,
       .minBytesSharedCpusPowerOfTwo = kRingSharedCpusPowerOfTwoFrom},
      {.kind = CollKind::AllGather, .name = "window", .generate = windowAllGather, .maxBytes = 0,
       .minBytes = kNever, .needsPeerAccess = true, .byFamily = kWindowAllGatherOnAmd},
      {.kind = CollKind::AllGather, .name = "direct", .generate = directAllGather, .maxBytes = 0,
       .minBytes = kDirectCopyFrom, .needsPeerAccess = true, .byFamily = kDirectAllGatherOnAmd},
      {.kind = CollKind::AllGather, .name = "ring", .generate = ringAllGather, .maxBytes = 0,
       .minBytesSharedCpusPowerOfTwo = kRingSharedCpusPowerOfTwoFrom},
      {CollKind::AllGather, "rhd", rhdAllGather, 0},
      {.kind = CollKind::AllGather, .name = "hier", .generate = hierAllGather, .maxBytes = 0,
       .minBytesSharedCpusPowerOfTwo = kRingSharedCpusPowerOfTwoFrom},
      {.kind = CollKind::Broadcast, .name = "direct", .generate = directBroadcast, .maxBytes = 0,
       .minBytes = kDirectFrom, .needsPeerAccess = true, .minBytesSharedCpus = kSharedCpusSingleCopyFrom},
      {CollKind::Broadcast, "ring", ringBroadcast, 0},
      {CollKind::Broadcast, "tree", treeBroadcast, 0},
      {CollKind::Broadcast, "hier", hierBroadcast, 0},
      {.kind = CollKind::Reduce, .name = "direct", .generate = directReduce, .maxBytes = 0,
       .minBytes = kDirectReduceFrom, .needsPeerAccess = true, .minBytesSharedCpus = kSharedCpusSingleCopyFrom,
       .byFamily = kDirectReduceOnAmd},
      {CollKind::Reduce, "ring", ringReduce, 0},
      {CollKind::Reduce, "tree", treeReduce, 0},
      {CollKind::Reduce, "hier", hierReduce, 0},
      {.kind = CollKind::AlltoAll, .name = "window", .generate = windowAlltoAll, .maxBytes = 0,
       .minBytes = kNever, .needsPeerAccess = true, .byFamily = kWindowAlltoAllOnAmd},
      {.kind = CollKind::AlltoAll, .name = "direct", .generate = directAlltoAll, .maxBytes = 0,
       .minBytes = kDirectCopyFrom, .needsPeerAccess = true, .byFamily = kDirectAlltoAllOnAmd},
      {CollKind::AlltoAll, "pairwise", pairwiseAlltoAll, 0},
      {CollKind::Gather, "direct", directGather, 0},
      {CollKind::Scatter, "direct", directScatter, 0},
  };
  return table;
}

}  // namespace hcl
