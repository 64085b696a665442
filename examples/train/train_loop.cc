// HCL's minimal training loop: data-parallel SGD of a small perceptron, one
// rank per process, each rank on the device it is given (cpu, cuda, hip, or
// sim, the stand-in GPU), ranks spread over emulated hosts so that some pairs
// talk over shared memory and others over a network; --host-env gives the
// hosts different networks (verbs on one pair, libfabric on another, TCP
// between the rest), as in a cluster of mixed NICs. Gradients live in the rank's
// device memory and are averaged with hclAllReduce on an HCL stream, the
// output layer's bucket while the hidden layer's gradient is still being
// computed, as PyTorch's DDP does.
//
// At the first and the last step every rank checks the averaged gradient
// against the mean of all ranks' own gradients, computed on the host; at the
// end, that all ranks hold bit-identical parameters and that the loss fell.
// The exit code says whether all held (0), not (1), a requested device is
// missing on this machine (77), or the options are wrong (2).
//
//   train_loop [--ranks N] [--devices cpu,sim,cuda,hip] [--hosts H] [--steps S]
//              [--batch B] [--hidden W] [--lr RATE] [--kill-rank R [--kill-step S]]
//              [--grace SECONDS] [--host-env H:NAME=VALUE ...]
//
// Started with RANK and WORLD_SIZE in the environment (and HCL_COMM_ID, so
// that the ranks agree on an id), it runs that one rank instead of forking.
#include <getopt.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hcl.h"
#include "mlp.h"

namespace {

constexpr int kExitSkip = 77;

struct Job {
  int ranks = 4;
  bool ranksGiven = false;
  std::vector<std::string> devices{"cpu"};  // rank r gets devices[r % size]
  int hosts = 2;                            // emulated hosts; 0: leave HCL_HOSTID alone
  int steps = 300;
  int batch = 64;
  int hidden = 128;
  float lr = 0.05f;
  int killRank = -1;  // this rank dies at killStep; the others shrink the communicator and go on
  int killStep = -1;
  double graceSeconds = 10;  // once a forked rank has failed, the others get this long before they are killed
  struct HostSetting {
    int host;
    std::string name, value;
  };
  std::vector<HostSetting> hostEnv;  // set in the ranks of one emulated host
};

constexpr int kExitUsage = 2;
constexpr int kMaxRanks = 256;
constexpr int kMinSteps = 20;  // fewer cannot show the loss halving

[[noreturn]] void usageError(const std::string& what) {
  std::fprintf(stderr, "train_loop: %s\n", what.c_str());
  std::exit(kExitUsage);
}

// The whole text must be an integer in [lo, hi].
int intOption(const char* name, const char* text, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || value < lo || value > hi) {
    usageError(std::string(name) + " '" + text + "' is not an integer from " + std::to_string(lo) + " to " +
               std::to_string(hi));
  }
  return static_cast<int>(value);
}

// The whole text must be a number that `inRange` accepts, as `range` says.
template <class InRange>
double realOption(const char* name, const char* text, InRange inRange, const char* range) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !inRange(value)) usageError(std::string(name) + " '" + text + "' is not " + range);
  return value;
}

// auto, cpu, or sim/cuda/hip with an optional ":index".
bool deviceNameIsWellFormed(const std::string& name) {
  const size_t colon = name.find(':');
  const std::string kind = name.substr(0, colon);
  if (kind == "auto" || kind == "cpu") return colon == std::string::npos;
  if (kind != "sim" && kind != "cuda" && kind != "hip") return false;
  if (colon == std::string::npos) return true;
  const std::string index = name.substr(colon + 1);
  return !index.empty() && index.size() < 6 && std::all_of(index.begin(), index.end(), ::isdigit);
}

std::vector<std::string> deviceList(const char* text) {
  std::vector<std::string> items;
  std::string item;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!deviceNameIsWellFormed(item)) {
        usageError("--devices: '" + item + "' is not auto, cpu, sim[:N], cuda[:N] or hip[:N]");
      }
      items.push_back(item);
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return items;
}

// "H:NAME=VALUE".
Job::HostSetting hostSetting(const char* text) {
  const std::string item = text;
  const size_t colon = item.find(':'), equals = item.find('=');
  if (colon == std::string::npos || equals == std::string::npos || equals < colon || equals == colon + 1) {
    usageError("--host-env '" + item + "' is not HOST:NAME=VALUE");
  }
  const std::string host = item.substr(0, colon);
  return {intOption("--host-env's host", host.c_str(), 0, kMaxRanks - 1), item.substr(colon + 1, equals - colon - 1),
          item.substr(equals + 1)};
}

Job parse(int argc, char** argv) {
  Job job;
  const option longOpts[] = {{"ranks", required_argument, nullptr, 'n'},  {"devices", required_argument, nullptr, 'd'},
                             {"hosts", required_argument, nullptr, 'H'},  {"steps", required_argument, nullptr, 's'},
                             {"batch", required_argument, nullptr, 'b'},  {"hidden", required_argument, nullptr, 'w'},
                             {"lr", required_argument, nullptr, 'l'},     {"help", no_argument, nullptr, 'h'},
                             {"kill-rank", required_argument, nullptr, 'k'},
                             {"kill-step", required_argument, nullptr, 'K'},
                             {"grace", required_argument, nullptr, 'g'},
                             {"host-env", required_argument, nullptr, 'e'},
                             {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "n:d:H:s:b:w:l:hk:K:g:e:", longOpts, nullptr)) != -1) {
    switch (c) {
      case 'n':
        job.ranks = intOption("--ranks", optarg, 1, kMaxRanks);
        job.ranksGiven = true;
        break;
      case 'd': job.devices = deviceList(optarg); break;
      case 'H': job.hosts = intOption("--hosts", optarg, 0, kMaxRanks); break;
      case 's': job.steps = intOption("--steps", optarg, kMinSteps, 10000000); break;
      case 'b': job.batch = intOption("--batch", optarg, 1, 1 << 20); break;
      case 'w': job.hidden = intOption("--hidden", optarg, 1, 1 << 16); break;
      case 'k': job.killRank = intOption("--kill-rank", optarg, 0, kMaxRanks - 1); break;
      case 'K': job.killStep = intOption("--kill-step", optarg, 1, 10000000); break;
      case 'l':
        job.lr = static_cast<float>(realOption("--lr", optarg, [](double v) { return v > 0 && v <= 10; },
                                               "a number above 0 and at most 10"));
        break;
      case 'g':
        job.graceSeconds = realOption("--grace", optarg, [](double v) { return v >= 0 && v <= 3600; },
                                      "a number of seconds from 0 to 3600");
        break;
      case 'e': job.hostEnv.push_back(hostSetting(optarg)); break;
      default:
        std::printf(
            "usage: %s [--ranks N] [--devices cpu,sim,cuda,hip] [--hosts H] [--steps S] [--batch B] [--hidden W] "
            "[--lr RATE] [--kill-rank R [--kill-step S]] [--grace SECONDS] [--host-env H:NAME=VALUE ...]\n",
            argv[0]);
        std::exit(c == 'h' ? 0 : kExitUsage);
    }
  }
  if (optind < argc) usageError(std::string("unexpected argument '") + argv[optind] + "'");
  if (job.killStep >= 0 && job.killRank < 0) usageError("--kill-step needs --kill-rank");
  if (job.killRank >= 0) {
    if (job.killStep < 0) job.killStep = job.steps / 2;
    if (job.killStep >= job.steps) usageError("--kill-step must come before the last step");
  }
  return job;
}

// What depends on the number of ranks, known once the launch mode is.
void checkAgainstRanks(const Job& job, int nranks) {
  for (const Job::HostSetting& s : job.hostEnv) {
    if (s.host >= std::min(job.hosts, nranks)) {
      usageError("--host-env names host " + std::to_string(s.host) + ", but the ranks are on " +
                 std::to_string(std::min(job.hosts, nranks)) + " emulated host(s) (--hosts)");
    }
  }
  if (job.killRank >= 0 && (job.killRank >= nranks || nranks < 2)) {
    usageError("--kill-rank " + std::to_string(job.killRank) + " must name one of at least 2 ranks (there are " +
               std::to_string(nranks) + ")");
  }
}

#define CHECK_HCL(call)                                                                              \
  do {                                                                                               \
    if (const hclResult_t r_ = (call); r_ != hclSuccess) {                                           \
      std::fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #call, hclGetErrorString(r_),      \
                   hclGetLastError(nullptr));                                                        \
      return 1;                                                                                      \
    }                                                                                                \
  } while (0)

// How forked ranks get the unique id: rank 0 creates it and writes one copy
// per other rank into a pipe (the parent starts no HCL threads before it
// forks). Each side keeps only the pipe ends it uses, so that if rank 0 dies
// first the others read end-of-file instead of waiting.
class IdPipe {
 public:
  IdPipe() {
    if (::pipe(fds_) != 0) std::perror("pipe");
  }
  ~IdPipe() {
    closeEnd(fds_[0]);
    closeEnd(fds_[1]);
  }
  IdPipe(const IdPipe&) = delete;
  IdPipe& operator=(const IdPipe&) = delete;
  void enterRank(int rank) { closeEnd(rank == 0 ? fds_[0] : fds_[1]); }
  void enterParent() {
    closeEnd(fds_[0]);
    closeEnd(fds_[1]);
  }
  // A pipe write this small is atomic, so each reader gets one whole id.
  bool shareId(int rank, int nranks, hclUniqueId& id) {
    if (rank != 0) return ::read(fds_[0], &id, sizeof id) == static_cast<ssize_t>(sizeof id);
    if (hclGetUniqueId(&id) != hclSuccess) return false;
    for (int r = 1; r < nranks; ++r) {
      if (::write(fds_[1], &id, sizeof id) != static_cast<ssize_t>(sizeof id)) return false;
    }
    return true;
  }

 private:
  static void closeEnd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  int fds_[2] = {-1, -1};
};

uint64_t fingerprint(const std::vector<float>& values) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (size_t i = 0; i < values.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  return h;
}

struct DeviceBuffer {
  hclComm_t comm = nullptr;
  void* ptr = nullptr;
  DeviceBuffer() = default;
  explicit DeviceBuffer(hclComm_t c) : comm(c) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }
  void reset() {
    if (ptr) hclCommMemFree(comm, ptr);  // fails harmlessly on a communicator that has failed
    ptr = nullptr;
  }
  float* floats() const { return static_cast<float*>(ptr); }
};

// What a rank trains with on its current communicator; rebuilt on the
// smaller communicator when a rank has died and the survivors shrink.
struct Replica {
  hclComm_t comm = nullptr;
  int rank = 0;  // in comm
  int nranks = 0;
  DeviceBuffer grads;  // [loss | output layer | hidden layer], averaged in place
  hclStream_t stream = nullptr;
  ~Replica() {
    if (stream) hclStreamDestroy(stream);
  }
};

// Passes a failed call's result on to the caller.
#define PASS_HCL(call)                                                   \
  do {                                                                   \
    if (const hclResult_t e_ = (call); e_ != hclSuccess) return e_;      \
  } while (0)

// Allocates the gradient buffer and the stream on r.comm, and takes rank 0's
// parameters and step, as DDP does when it starts and when it re-forms its
// group (a survivor that noticed a death one step later repeats rank 0's).
hclResult_t startReplica(Replica& r, std::vector<float>& params, int& step) {
  PASS_HCL(hclCommUserRank(r.comm, &r.rank));
  PASS_HCL(hclCommCount(r.comm, &r.nranks));
  r.grads.reset();
  r.grads.comm = r.comm;
  std::vector<float> state(1 + params.size());
  state[0] = static_cast<float>(step);  // exact: steps are below 2^24
  std::copy(params.begin(), params.end(), state.begin() + 1);
  const size_t bytes = state.size() * sizeof(float);
  PASS_HCL(hclCommMemAlloc(r.comm, &r.grads.ptr, bytes));
  PASS_HCL(hclCommMemcpy(r.comm, r.grads.ptr, state.data(), bytes));
  PASS_HCL(hclBcast(r.grads.ptr, state.size(), hclFloat, 0, r.comm, nullptr));
  PASS_HCL(hclCommMemcpy(r.comm, state.data(), r.grads.ptr, bytes));
  step = static_cast<int>(state[0]);
  std::copy(state.begin() + 1, state.end(), params.begin());
  return r.stream ? hclSuccess : hclStreamCreate(&r.stream);
}

// The averaged gradient (and loss) must be the mean of every rank's own, as
// the host computes it in double precision from an all-gather of them: a
// collective that gave every rank the same wrong answer (a sum, a stale or
// a partial result) still leaves the ranks identical and may still learn.
hclResult_t checkAverage(const Replica& r, const std::vector<float>& mine, const std::vector<float>& averaged,
                         int step, bool* agrees) {
  const size_t n = mine.size();
  DeviceBuffer gathered{r.comm};
  PASS_HCL(hclCommMemAlloc(r.comm, &gathered.ptr, (static_cast<size_t>(r.nranks) + 1) * n * sizeof(float)));
  float* own = gathered.floats() + static_cast<size_t>(r.nranks) * n;
  PASS_HCL(hclCommMemcpy(r.comm, own, mine.data(), n * sizeof(float)));
  PASS_HCL(hclAllGather(own, gathered.ptr, n, hclFloat, r.comm, nullptr));
  std::vector<float> all(static_cast<size_t>(r.nranks) * n);
  PASS_HCL(hclCommMemcpy(r.comm, all.data(), gathered.ptr, all.size() * sizeof(float)));
  *agrees = true;
  for (size_t i = 0; i < n && *agrees; ++i) {
    double sum = 0, magnitude = 0;
    for (int k = 0; k < r.nranks; ++k) {
      const double v = all[static_cast<size_t>(k) * n + i];
      sum += v;
      magnitude += std::fabs(v);
    }
    const double mean = sum / r.nranks;
    // Float sums of nranks terms, then one rounding for the division.
    const double tolerance = (r.nranks + 1) * std::numeric_limits<float>::epsilon() * magnitude / r.nranks + 1e-30;
    if (std::fabs(averaged[i] - mean) > tolerance) {
      std::fprintf(stderr, "rank %d: step %d: averaged value %zu is %.9g, the ranks' mean is %.9g\n", r.rank, step, i,
                   static_cast<double>(averaged[i]), mean);
      *agrees = false;
    }
  }
  return hclSuccess;
}

int train(const Job& job, int rank, hclComm_t& comm) {
  const train::MlpShape shape{16, job.hidden};
  const size_t nparams = shape.parameterCount();
  const size_t outputBucket = 1 + shape.outputLayerSize();  // the loss, then the output layer's gradient
  const std::vector<float> teacher = train::initialParameters(shape, 2024);
  // Each rank starts elsewhere; rank 0's start is broadcast, as in DDP.
  std::vector<float> params = train::initialParameters(shape, 7 + static_cast<uint64_t>(rank));
  Replica replica;
  replica.comm = comm;
  int resumeAt = 0;
  CHECK_HCL(startReplica(replica, params, resumeAt));

  std::mt19937_64 data(1000003ull * static_cast<uint64_t>(rank + 1));
  std::vector<float> host(1 + nparams);
  std::vector<float> local;  // this rank's own loss and gradient, kept where they are checked
  // One step: the gradient's two buckets averaged over the ranks into host.
  auto step = [&](const train::Batch& batch, bool keepLocal) -> hclResult_t {
    std::span<float> outputGrad(host.data() + 1, shape.outputLayerSize());
    std::span<float> hiddenGrad(host.data() + outputBucket, shape.hiddenLayerSize());
    hclResult_t issued = hclSuccess;
    train::lossAndGradients(shape, params, batch, outputGrad, hiddenGrad, [&](float loss) {
      host[0] = loss;
      issued = hclCommMemcpy(replica.comm, replica.grads.ptr, host.data(), outputBucket * sizeof(float));
      if (issued == hclSuccess) {
        issued = hclAllReduce(replica.grads.ptr, replica.grads.ptr, outputBucket, hclFloat, hclAvg, replica.comm,
                              replica.stream);
      }
    });
    PASS_HCL(issued);
    float* hiddenOnDevice = replica.grads.floats() + outputBucket;
    PASS_HCL(hclCommMemcpy(replica.comm, hiddenOnDevice, hiddenGrad.data(), hiddenGrad.size_bytes()));
    PASS_HCL(hclAllReduce(hiddenOnDevice, hiddenOnDevice, hiddenGrad.size(), hclFloat, hclAvg, replica.comm,
                          replica.stream));
    if (keepLocal) local = host;  // still this rank's own: the averages are copied back below
    PASS_HCL(hclStreamSynchronize(replica.stream));
    return hclCommMemcpy(replica.comm, host.data(), replica.grads.ptr, host.size() * sizeof(float));
  };

  float firstLoss = 0, lastLoss = 0;
  bool shrunk = false, averagesAgree = true;
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < job.steps; ++s) {
    if (s == job.killStep && rank == job.killRank) raise(SIGKILL);  // the failure the job must survive
    const train::Batch batch = train::makeBatch(shape, teacher, static_cast<size_t>(job.batch), data);
    const bool checked = s == 0 || s == job.steps - 1;
    if (const hclResult_t failed = step(batch, checked); failed != hclSuccess) {
      // Only the planned death is survived; any other failure ends the job.
      if (job.killRank < 0 || shrunk || s < job.killStep) CHECK_HCL(failed);
      // A rank died: the survivors drop it and go on from rank 0's parameters.
      std::fprintf(stderr, "rank %d: step %d failed (%s); shrinking the communicator without rank %d\n", rank, s,
                   hclGetLastError(replica.comm), job.killRank);
      int gone[] = {job.killRank};
      hclComm_t smaller = nullptr;
      (void)hclStreamSynchronize(replica.stream);  // drains what the failed step queued
      CHECK_HCL(hclCommShrink(replica.comm, gone, 1, &smaller, nullptr, HCL_SHRINK_ABORT));
      replica.grads.reset();
      hclCommAbort(replica.comm);
      replica.comm = comm = smaller;
      shrunk = true;
      CHECK_HCL(startReplica(replica, params, s));
      if (replica.rank == 0) std::printf("step %5d  rank %d died; %d ranks go on\n", s, job.killRank, replica.nranks);
      --s;  // the step again, on the survivors
      continue;
    }
    if (checked) {
      bool agrees = false;
      CHECK_HCL(checkAverage(replica, local, host, s, &agrees));
      averagesAgree = averagesAgree && agrees;
    }
    for (size_t i = 0; i < nparams; ++i) params[i] -= job.lr * host[1 + i];
    if (s == 0) firstLoss = host[0];
    lastLoss = host[0];
    if (replica.rank == 0 && (s % std::max(1, job.steps / 6) == 0 || s == job.steps - 1)) {
      std::printf("step %5d  loss %.5f (mean over ranks)\n", s, static_cast<double>(host[0]));
      std::fflush(stdout);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_HCL(hclStreamSynchronize(replica.stream));

  // Every rank must hold the same bits: the averaged gradient is the same
  // everywhere, so any difference is a collective that returned different
  // results to different ranks.
  const int nranks = replica.nranks;
  const uint64_t mine = fingerprint(params);
  DeviceBuffer prints{comm};
  CHECK_HCL(hclCommMemAlloc(comm, &prints.ptr, static_cast<size_t>(nranks + 1) * sizeof(uint64_t)));
  auto* slots = static_cast<uint64_t*>(prints.ptr);
  CHECK_HCL(hclCommMemcpy(comm, slots + nranks, &mine, sizeof mine));
  CHECK_HCL(hclAllGather(slots + nranks, slots, 1, hclUint64, comm, nullptr));
  std::vector<uint64_t> all(static_cast<size_t>(nranks));
  CHECK_HCL(hclCommMemcpy(comm, all.data(), slots, all.size() * sizeof(uint64_t)));
  int differing = 0;
  for (uint64_t p : all) differing += p != all[0] ? 1 : 0;
  const bool learned = lastLoss < 0.5f * firstLoss;
  if (replica.rank == 0) {
    std::printf("%d steps in %.2f s (%.1f ms/step); loss %.5f -> %.5f (%s); gradients %s; parameters %s\n",
                job.steps, seconds, seconds * 1e3 / job.steps, static_cast<double>(firstLoss),
                static_cast<double>(lastLoss), learned ? "learned" : "DID NOT LEARN",
                averagesAgree ? "the ranks' mean at the first and last step" : "NOT THE RANKS' MEAN",
                differing == 0 ? "bit-identical on every rank" : "DIFFER BETWEEN RANKS");
  }
  return learned && averagesAgree && differing == 0 ? 0 : 1;
}

// Whether every rank's device is usable, agreed over the communicator (a
// rank whose device is missing joins on the CPU), so that one missing GPU
// ends the whole job at once.
int agreeUsable(hclComm_t comm, int rank, bool mine, bool& all) {
  DeviceBuffer flag{comm};
  CHECK_HCL(hclCommMemAlloc(comm, &flag.ptr, sizeof(int32_t)));
  const int32_t value = mine ? 1 : 0;
  CHECK_HCL(hclCommMemcpy(comm, flag.ptr, &value, sizeof value));
  CHECK_HCL(hclAllReduce(flag.ptr, flag.ptr, 1, hclInt32, hclMin, comm, nullptr));
  int32_t agreed = 0;
  CHECK_HCL(hclCommMemcpy(comm, &agreed, flag.ptr, sizeof agreed));
  all = agreed == 1;
  return 0;
}

// `ids` is null when another launcher started the rank; the id then comes
// from hclGetUniqueId with HCL_COMM_ID set.
int runRank(const Job& job, int rank, int nranks, IdPipe* ids) {
  const std::string& device = job.devices[static_cast<size_t>(rank) % job.devices.size()];
  // Consecutive ranks share a host, as launchers place them.
  const auto hostOf = [&](int r) { return static_cast<int>(static_cast<long>(r) * job.hosts / nranks); };
  const std::string host = job.hosts > 0 ? "host" + std::to_string(hostOf(rank)) : "";
  if (!host.empty()) setenv("HCL_HOSTID", host.c_str(), 1);
  for (const Job::HostSetting& s : job.hostEnv) {
    if (job.hosts > 0 && s.host == hostOf(rank)) setenv(s.name.c_str(), s.value.c_str(), 1);
  }
  const bool usable = hclSetDevice(device.c_str()) == hclSuccess;
  if (!usable) {
    std::fprintf(stderr, "rank %d: device %s is not usable here: %s\n", rank, device.c_str(),
                 hclGetLastError(nullptr));
    CHECK_HCL(hclSetDevice("cpu"));
  }

  hclUniqueId id;
  if (ids ? !ids->shareId(rank, nranks, id) : hclGetUniqueId(&id) != hclSuccess) {
    std::fprintf(stderr, "rank %d: no unique id: %s\n", rank, hclGetLastError(nullptr));
    return 1;
  }
  hclComm_t comm = nullptr;
  CHECK_HCL(hclCommInitRank(&comm, nranks, id, rank));
  bool allUsable = false;
  int result = agreeUsable(comm, rank, usable, allUsable);
  if (result == 0 && !allUsable) {
    if (rank == 0) std::printf("SKIPPED: a requested device is not usable on this machine (see above)\n");
    CHECK_HCL(hclCommDestroy(comm));
    return kExitSkip;
  }
  if (result == 0) {
    char name[64] = {};
    CHECK_HCL(hclCommGetDevice(comm, name, sizeof name));
    std::printf("rank %d: device %s%s%s\n", rank, name, host.empty() ? "" : ", emulated ", host.c_str());
    std::fflush(stdout);
    // The first rank of each host: its links show every kind of link
    // that leaves the host.
    if (rank == 0 || (job.hosts > 0 && hostOf(rank - 1) != hostOf(rank))) {
      std::vector<char> links(16384);
      size_t needed = 0;
      if (hclCommDescribeLinks(comm, links.data(), links.size(), &needed) == hclSuccess) {
        std::printf("links seen from rank %d:\n%s", rank, links.data());
      }
    }
    result = train(job, rank, comm);
  }
  if (result != 0) {
    hclCommAbort(comm);
    return result;
  }
  CHECK_HCL(hclCommDestroy(comm));
  return 0;
}

// Waits for every rank, as a launcher does: once one has failed (crashed, or
// exited with an error), the rest get a grace period to report their own
// error and are then killed, so a dead rank never leaves the job hanging.
int reap(std::vector<pid_t> children, pid_t expectedVictim, double graceSeconds) {
  using Clock = std::chrono::steady_clock;
  const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(graceSeconds));
  int worst = 0;
  bool skipped = false;
  auto killAt = Clock::time_point::max();  // set once a rank has failed
  while (!children.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      children.erase(std::remove(children.begin(), children.end(), pid), children.end());
      const bool clean = (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == kExitSkip)) ||
                         (pid == expectedVictim && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
      skipped = skipped || (WIFEXITED(status) && WEXITSTATUS(status) == kExitSkip);
      if (!clean) {
        if (WIFSIGNALED(status)) std::fprintf(stderr, "a rank was killed by signal %d\n", WTERMSIG(status));
        worst = 1;
        if (killAt == Clock::time_point::max()) killAt = Clock::now() + grace;
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) {
      std::fprintf(stderr, "waitpid: %s; %zu rank(s) unaccounted for\n", std::strerror(errno), children.size());
      return 1;
    }
    if (Clock::now() > killAt) {
      std::fprintf(stderr, "stopping the %zu rank(s) still running after a rank failed\n", children.size());
      for (pid_t child : children) kill(child, SIGKILL);
      killAt = Clock::time_point::max();  // reap them; they count as failed already
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return worst != 0 ? worst : skipped ? kExitSkip : 0;
}

int forkRanks(const Job& job) {
  std::printf("HCL training loop: %d ranks, devices %s, %d emulated hosts, perceptron 16-%d-1, batch %d per rank, "
              "%d steps\n", job.ranks, [&] {
                std::string list;
                for (const std::string& d : job.devices) list += (list.empty() ? "" : ",") + d;
                return list;
              }().c_str(), job.hosts, job.hidden, job.batch, job.steps);
  std::fflush(stdout);
  IdPipe ids;
  std::vector<pid_t> children;
  std::signal(SIGCHLD, SIG_DFL);  // an inherited SIG_IGN would reap the ranks before we learn how they ended
  const pid_t parent = getpid();
  for (int r = 0; r < job.ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      // A rank does not outlive the job: if the parent is killed, so is it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      ids.enterRank(r);
      _exit(runRank(job, r, job.ranks, &ids));
    }
    if (pid < 0) {
      std::perror("fork");
      break;
    }
    children.push_back(pid);
  }
  ids.enterParent();
  const bool forkedAll = children.size() == static_cast<size_t>(job.ranks);
  if (!forkedAll) {
    for (pid_t child : children) kill(child, SIGKILL);
  }
  const pid_t victim = job.killRank >= 0 && forkedAll ? children[static_cast<size_t>(job.killRank)] : -1;
  const int result = reap(std::move(children), victim, job.graceSeconds);
  return forkedAll ? result : 1;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Job job = parse(argc, argv);
  const char* rankText = std::getenv("RANK");
  const char* worldText = std::getenv("WORLD_SIZE");
  if (!rankText && !worldText) {
    checkAgainstRanks(job, job.ranks);
    job.hosts = std::min(job.hosts, job.ranks);  // more hosts than ranks would leave some empty
    return forkRanks(job);
  }
  // Launched by another launcher: one rank per process; HCL_COMM_ID makes
  // every process's hclGetUniqueId return the same id.
  if (!rankText || !worldText) usageError("set both RANK and WORLD_SIZE, or neither (to fork the ranks here)");
  const int nranks = intOption("WORLD_SIZE", worldText, 1, 1 << 20);
  const int rank = intOption("RANK", rankText, 0, nranks - 1);
  if (!std::getenv("HCL_COMM_ID") && !std::getenv("NCCL_COMM_ID")) {
    usageError("RANK and WORLD_SIZE are set: set HCL_COMM_ID=host:port too, the same in every rank");
  }
  if (job.ranksGiven && job.ranks != nranks) {
    usageError("--ranks " + std::to_string(job.ranks) + " differs from WORLD_SIZE " + std::to_string(nranks));
  }
  if (!job.hostEnv.empty()) {
    usageError("--host-env sets the environment of emulated hosts (forked ranks); a launcher sets each process's "
               "environment itself");
  }
  checkAgainstRanks(job, nranks);
  Job one = job;
  one.hosts = 0;  // real hosts: keep their identity
  return runRank(one, rank, nranks, nullptr);
}
