// HCL's minimal training loop: data-parallel SGD of a small perceptron, one
// rank per process, each rank on the device it is given (cpu, cuda, hip, or
// sim, the stand-in GPU), ranks spread over emulated hosts so that some pairs
// talk over shared memory and others over TCP. Gradients live in the rank's
// device memory and are averaged with hclAllReduce on an HCL stream, the
// output layer's bucket while the hidden layer's gradient is still being
// computed, as PyTorch's DDP does.
//
// At the end every rank checks that all ranks hold bit-identical parameters
// and that the loss fell; the exit code says whether both held (0), not
// (1), or a requested device is missing on this machine (77).
//
//   train_loop [--ranks N] [--devices cpu,sim,cuda,hip] [--hosts H] [--steps S]
//              [--batch B] [--hidden W] [--lr RATE]
//
// Started with RANK and WORLD_SIZE in the environment (and HCL_COMM_ID, so
// that the ranks agree on an id), it runs that one rank instead of forking.
#include <getopt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hcl.h"
#include "mlp.h"

namespace {

constexpr int kExitSkip = 77;

struct Job {
  int ranks = 4;
  std::vector<std::string> devices{"cpu"};  // rank r gets devices[r % size]
  int hosts = 2;                            // emulated hosts; 0: leave HCL_HOSTID alone
  int steps = 300;
  int batch = 64;
  int hidden = 128;
  float lr = 0.05f;
};

std::vector<std::string> splitList(const char* text) {
  std::vector<std::string> items;
  std::string item;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!item.empty()) items.push_back(item);
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return items;
}

Job parse(int argc, char** argv) {
  Job job;
  const option longOpts[] = {{"ranks", required_argument, nullptr, 'n'},  {"devices", required_argument, nullptr, 'd'},
                             {"hosts", required_argument, nullptr, 'H'},  {"steps", required_argument, nullptr, 's'},
                             {"batch", required_argument, nullptr, 'b'},  {"hidden", required_argument, nullptr, 'w'},
                             {"lr", required_argument, nullptr, 'l'},     {"help", no_argument, nullptr, 'h'},
                             {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "n:d:H:s:b:w:l:h", longOpts, nullptr)) != -1) {
    switch (c) {
      case 'n': job.ranks = std::atoi(optarg); break;
      case 'd': job.devices = splitList(optarg); break;
      case 'H': job.hosts = std::atoi(optarg); break;
      case 's': job.steps = std::atoi(optarg); break;
      case 'b': job.batch = std::atoi(optarg); break;
      case 'w': job.hidden = std::atoi(optarg); break;
      case 'l': job.lr = std::strtof(optarg, nullptr); break;
      default:
        std::printf(
            "usage: %s [--ranks N] [--devices cpu,sim,cuda,hip] [--hosts H] [--steps S] [--batch B] [--hidden W] "
            "[--lr RATE]\n",
            argv[0]);
        std::exit(c == 'h' ? 0 : 2);
    }
  }
  if (job.ranks < 1 || job.devices.empty() || job.hosts < 0 || job.steps < 1 || job.batch < 1 || job.hidden < 1 ||
      !(job.lr > 0)) {
    std::fprintf(stderr, "%s: ranks, steps, batch, hidden and lr must be positive, hosts not negative, and "
                 "--devices must name at least one device\n", argv[0]);
    std::exit(2);
  }
  return job;
}

#define CHECK_HCL(call)                                                                              \
  do {                                                                                               \
    if (const hclResult_t r_ = (call); r_ != hclSuccess) {                                           \
      std::fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #call, hclGetErrorString(r_),      \
                   hclGetLastError(nullptr));                                                        \
      return 1;                                                                                      \
    }                                                                                                \
  } while (0)

// What forked ranks settle through pipes before any of them joins the
// communicator: whether every rank's device is usable, so that a missing GPU
// ends the job at once, and the unique id, which rank 0 creates (the parent
// starts no HCL threads before it forks).
class Rendezvous {
 public:
  Rendezvous() {
    for (int* p : {up_, down_, ids_}) {
      if (::pipe(p) != 0) std::perror("pipe");
    }
  }
  // Each side keeps only its own pipe ends, so that a rank that dies early
  // shows as end-of-file instead of leaving the others waiting.
  void enterRank(int rank) {
    closeEnd(up_[0]);
    closeEnd(down_[1]);
    closeEnd(rank == 0 ? ids_[0] : ids_[1]);
  }
  void enterParent() {
    for (int* end : {&up_[1], &down_[0], &ids_[0], &ids_[1]}) closeEnd(*end);
  }
  // In a rank: reports, then waits for the verdict on all ranks.
  bool allUsable(bool mine) {
    const char c = mine ? 'y' : 'n';
    char verdict = 'n';
    if (::write(up_[1], &c, 1) != 1 || ::read(down_[0], &verdict, 1) != 1) return false;
    return verdict == 'y';
  }
  // In the parent: collects n reports and tells every rank the verdict.
  bool decide(int n, bool all) {
    for (int i = 0; i < n; ++i) {
      char c = 'n';
      if (::read(up_[0], &c, 1) != 1) c = 'n';
      all = all && c == 'y';
    }
    const std::string verdict(static_cast<size_t>(n), all ? 'y' : 'n');
    return ::write(down_[1], verdict.data(), verdict.size()) == static_cast<ssize_t>(verdict.size()) && all;
  }
  // In a rank: rank 0 creates the id and hands one copy to each other rank
  // (a pipe write this small is atomic, so each reader gets one whole id).
  bool shareId(int rank, int nranks, hclUniqueId& id) {
    if (rank != 0) return ::read(ids_[0], &id, sizeof id) == static_cast<ssize_t>(sizeof id);
    if (hclGetUniqueId(&id) != hclSuccess) return false;
    for (int r = 1; r < nranks; ++r) {
      if (::write(ids_[1], &id, sizeof id) != static_cast<ssize_t>(sizeof id)) return false;
    }
    return true;
  }

 private:
  static void closeEnd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  int up_[2] = {-1, -1};
  int down_[2] = {-1, -1};
  int ids_[2] = {-1, -1};
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
  ~DeviceBuffer() {
    if (ptr) hclCommMemFree(comm, ptr);
  }
  float* floats() const { return static_cast<float*>(ptr); }
};

int train(const Job& job, int rank, int nranks, hclComm_t comm) {
  const train::MlpShape shape{16, job.hidden};
  const size_t nparams = shape.parameterCount();
  const size_t outputBucket = 1 + shape.outputLayerSize();  // the loss, then the output layer's gradient
  const std::vector<float> teacher = train::initialParameters(shape, 2024);
  // Each rank starts elsewhere; rank 0's start is broadcast, as in DDP.
  std::vector<float> params = train::initialParameters(shape, 7 + static_cast<uint64_t>(rank));

  DeviceBuffer grads{comm};  // [loss | output layer | hidden layer], averaged in place
  CHECK_HCL(hclCommMemAlloc(comm, &grads.ptr, (1 + nparams) * sizeof(float)));
  CHECK_HCL(hclCommMemcpy(comm, grads.floats() + 1, params.data(), nparams * sizeof(float)));
  CHECK_HCL(hclBcast(grads.floats() + 1, nparams, hclFloat, 0, comm, nullptr));
  CHECK_HCL(hclCommMemcpy(comm, params.data(), grads.floats() + 1, nparams * sizeof(float)));

  hclStream_t stream = nullptr;
  CHECK_HCL(hclStreamCreate(&stream));
  std::mt19937_64 data(1000003ull * static_cast<uint64_t>(rank + 1));
  std::vector<float> host(1 + nparams);
  float firstLoss = 0, lastLoss = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < job.steps; ++step) {
    const train::Batch batch = train::makeBatch(shape, teacher, static_cast<size_t>(job.batch), data);
    std::span<float> outputGrad(host.data() + 1, shape.outputLayerSize());
    std::span<float> hiddenGrad(host.data() + outputBucket, shape.hiddenLayerSize());
    hclResult_t issued = hclSuccess;
    train::lossAndGradients(shape, params, batch, outputGrad, hiddenGrad, [&](float loss) {
      host[0] = loss;
      issued = hclCommMemcpy(comm, grads.ptr, host.data(), outputBucket * sizeof(float));
      if (issued == hclSuccess) {
        issued = hclAllReduce(grads.ptr, grads.ptr, outputBucket, hclFloat, hclAvg, comm, stream);
      }
    });
    CHECK_HCL(issued);
    float* hiddenOnDevice = grads.floats() + outputBucket;
    CHECK_HCL(hclCommMemcpy(comm, hiddenOnDevice, hiddenGrad.data(), hiddenGrad.size_bytes()));
    CHECK_HCL(hclAllReduce(hiddenOnDevice, hiddenOnDevice, hiddenGrad.size(), hclFloat, hclAvg, comm, stream));
    CHECK_HCL(hclStreamSynchronize(stream));
    CHECK_HCL(hclCommMemcpy(comm, host.data(), grads.ptr, host.size() * sizeof(float)));
    for (size_t i = 0; i < nparams; ++i) params[i] -= job.lr * host[1 + i];
    if (step == 0) firstLoss = host[0];
    lastLoss = host[0];
    if (rank == 0 && (step % std::max(1, job.steps / 6) == 0 || step == job.steps - 1)) {
      std::printf("step %5d  loss %.5f (mean over ranks)\n", step, static_cast<double>(host[0]));
      std::fflush(stdout);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_HCL(hclStreamDestroy(stream));

  // Every rank must hold the same bits: the averaged gradient is the same
  // everywhere, so any difference is a collective that returned different
  // results to different ranks.
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
  if (rank == 0) {
    std::printf("%d steps in %.2f s (%.1f ms/step); loss %.5f -> %.5f (%s); parameters %s\n", job.steps, seconds,
                seconds * 1e3 / job.steps, static_cast<double>(firstLoss), static_cast<double>(lastLoss),
                learned ? "learned" : "DID NOT LEARN",
                differing == 0 ? "bit-identical on every rank" : "DIFFER BETWEEN RANKS");
  }
  return learned && differing == 0 ? 0 : 1;
}

// `meet` is null when another launcher started the rank; the id then comes
// from hclGetUniqueId with HCL_COMM_ID set.
int runRank(const Job& job, int rank, int nranks, Rendezvous* meet) {
  const std::string& device = job.devices[static_cast<size_t>(rank) % job.devices.size()];
  // Consecutive ranks share a host, as launchers place them.
  const std::string host =
      job.hosts > 0 ? "host" + std::to_string(static_cast<long>(rank) * job.hosts / nranks) : "";
  if (!host.empty()) setenv("HCL_HOSTID", host.c_str(), 1);
  const hclResult_t chosen = hclSetDevice(device.c_str());
  if (chosen != hclSuccess) {
    std::fprintf(stderr, "rank %d: device %s is not usable here: %s\n", rank, device.c_str(), hclGetLastError(nullptr));
  }
  if (meet && !meet->allUsable(chosen == hclSuccess)) return kExitSkip;
  if (chosen != hclSuccess) return 1;

  hclUniqueId id;
  if (meet ? !meet->shareId(rank, nranks, id) : hclGetUniqueId(&id) != hclSuccess) {
    std::fprintf(stderr, "rank %d: no unique id: %s\n", rank, hclGetLastError(nullptr));
    return 1;
  }
  hclComm_t comm = nullptr;
  CHECK_HCL(hclCommInitRank(&comm, nranks, id, rank));
  char name[64] = {};
  CHECK_HCL(hclCommGetDevice(comm, name, sizeof name));
  std::printf("rank %d: device %s%s%s\n", rank, name, host.empty() ? "" : ", emulated ", host.c_str());
  std::fflush(stdout);
  if (rank == 0) {
    std::vector<char> links(16384);
    size_t needed = 0;
    if (hclCommDescribeLinks(comm, links.data(), links.size(), &needed) == hclSuccess) {
      std::printf("links seen from rank 0:\n%s", links.data());
    }
  }
  const int result = train(job, rank, nranks, comm);
  if (result != 0) {
    hclCommAbort(comm);
    return result;
  }
  CHECK_HCL(hclCommDestroy(comm));
  return 0;
}

int forkRanks(const Job& job) {
  std::printf("HCL training loop: %d ranks, devices %s, %d emulated hosts, perceptron 16-%d-1, batch %d per rank, "
              "%d steps\n", job.ranks, [&] {
                std::string list;
                for (const std::string& d : job.devices) list += (list.empty() ? "" : ",") + d;
                return list;
              }().c_str(), job.hosts, job.hidden, job.batch, job.steps);
  std::fflush(stdout);
  Rendezvous meet;
  std::vector<pid_t> children;
  for (int r = 0; r < job.ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      meet.enterRank(r);
      _exit(runRank(job, r, job.ranks, &meet));
    }
    if (pid < 0) {
      std::perror("fork");
      break;
    }
    children.push_back(pid);
  }
  meet.enterParent();
  const bool forkedAll = children.size() == static_cast<size_t>(job.ranks);
  const bool usable = meet.decide(static_cast<int>(children.size()), forkedAll);
  int worst = 0;
  for (pid_t pid : children) {
    int status = 0;
    if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
      const int code = WEXITSTATUS(status);
      if (code != 0 && code != kExitSkip) worst = 1;
    } else {
      worst = 1;
    }
  }
  if (!forkedAll) return 1;
  if (!usable && worst == 0) {
    std::printf("SKIPPED: a requested device is not usable on this machine (see above)\n");
    return kExitSkip;
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const Job job = parse(argc, argv);
  const char* rankText = std::getenv("RANK");
  const char* worldText = std::getenv("WORLD_SIZE");
  if (!rankText || !worldText) return forkRanks(job);
  // Launched by another launcher: one rank per process; HCL_COMM_ID makes
  // every process's hclGetUniqueId return the same id.
  const int rank = std::atoi(rankText), nranks = std::atoi(worldText);
  if (!std::getenv("HCL_COMM_ID") && !std::getenv("NCCL_COMM_ID")) {
    std::fprintf(stderr, "RANK and WORLD_SIZE are set: set HCL_COMM_ID=host:port too, the same in every rank\n");
    return 2;
  }
  Job one = job;
  one.hosts = 0;  // real hosts: keep their identity
  return runRank(one, rank, nranks, nullptr);
}
