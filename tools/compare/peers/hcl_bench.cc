// HCL peer of tools/compare: hclAllReduce, hclAllGather, hclReduceScatter,
// hclBroadcast, hclReduce and hclAlltoAll on floats, timed by the method in
// sweep.h (the fallback while perf/ has no *_perf). Ranks are processes
// started with RANK, WORLD_SIZE and HCL_COMM_ID=host:port; every process gets
// the same unique id from it.
//   -A memalloc   buffers from hclMemAlloc instead of malloc
//   -J FILE.json  nccl-tests JSON (with several collectives: FILE.<coll>.json)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hcl.h"
#include "nccl_json.h"
#include "sweep.h"

extern char** environ;

namespace {

void check(hclResult_t r, const char* what) {
  if (r != hclSuccess) {
    throw std::runtime_error(std::string(what) + " failed: " + hclGetErrorString(r) + " (" +
                             hclGetLastError(nullptr) + ")");
  }
}

// A float buffer from malloc or hclMemAlloc.
class Buffer {
 public:
  Buffer(size_t elems, bool memAlloc) : memAlloc_(memAlloc) {
    void* p = nullptr;
    if (memAlloc_) {
      check(hclMemAlloc(&p, elems * sizeof(float)), "hclMemAlloc");
    } else {
      p = std::malloc(elems * sizeof(float));
      if (!p) throw std::runtime_error("malloc of " + std::to_string(elems * sizeof(float)) + " bytes failed");
    }
    data_ = static_cast<float*>(p);
  }
  ~Buffer() {
    if (memAlloc_) hclMemFree(data_);
    else std::free(data_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  float* data() const { return data_; }

 private:
  bool memAlloc_;
  float* data_ = nullptr;
};

struct CommDeleter {
  void operator()(hclComm* c) const { hclCommDestroy(c); }
};
using Comm = std::unique_ptr<hclComm, CommDeleter>;

void runOnce(int coll, const float* send, float* recv, size_t count, int rank, hclComm_t comm) {
  switch (coll) {
    case SWEEP_ALLREDUCE:
      check(hclAllReduce(send, recv, count, hclFloat, hclSum, comm, nullptr), "hclAllReduce");
      break;
    case SWEEP_ALLGATHER:
      check(hclAllGather(send, recv, count, hclFloat, comm, nullptr), "hclAllGather");
      break;
    case SWEEP_REDUCESCATTER:
      check(hclReduceScatter(send, recv, count, hclFloat, hclSum, comm, nullptr), "hclReduceScatter");
      break;
    case SWEEP_BROADCAST:
    {
      // In place, as MPI_Bcast and Gloo's broadcast are: the root sends from its input.
      float* buffer = rank == SWEEP_ROOT ? const_cast<float*>(send) : recv;
      check(hclBroadcast(buffer, buffer, count, hclFloat, SWEEP_ROOT, comm, nullptr), "hclBroadcast");
    }
      break;
    case SWEEP_REDUCE:
      check(hclReduce(send, recv, count, hclFloat, hclSum, SWEEP_ROOT, comm, nullptr), "hclReduce");
      break;
    default:
      check(hclAlltoAll(send, recv, count, hclFloat, comm, nullptr), "hclAlltoAll");
      break;
  }
}

long sumAcrossRanks(long value, hclComm_t comm) {
  int64_t v = value, total = 0;
  check(hclAllReduce(&v, &total, 1, hclInt64, hclSum, comm, nullptr), "hclAllReduce(errors)");
  return static_cast<long>(total);
}

double maxAcrossRanks(double value, hclComm_t comm) {
  double out = 0;
  check(hclAllReduce(&value, &out, 1, hclDouble, hclMax, comm, nullptr), "hclAllReduce(max time)");
  return out;
}

std::vector<nccl_json::Device> gatherDevices(int nranks, hclComm_t comm) {
  constexpr size_t kHost = 64;
  std::vector<char> mine(kHost + sizeof(int32_t), 0), all(mine.size() * nranks);
  gethostname(mine.data(), kHost - 1);
  const int32_t pid = getpid();
  std::memcpy(mine.data() + kHost, &pid, sizeof pid);
  check(hclAllGather(mine.data(), all.data(), mine.size(), hclInt8, comm, nullptr), "hclAllGather(devices)");
  std::vector<nccl_json::Device> devices;
  for (int r = 0; r < nranks; ++r) {
    const char* at = all.data() + r * mine.size();
    int32_t p = 0;
    std::memcpy(&p, at + kHost, sizeof p);
    devices.push_back({r, p, std::string(at, strnlen(at, kHost))});
  }
  return devices;
}

std::string jsonPathFor(const sweep_options& o, int coll) {
  int ncolls = 0;
  for (int c = 0; c < SWEEP_NCOLLS; ++c) ncolls += o.colls[c];
  std::string path = o.jsonPath;
  if (ncolls == 1) return path;
  const size_t dot = path.rfind(".json");
  const std::string stem = dot == std::string::npos ? path : path.substr(0, dot);
  return stem + "." + sweep_coll_names[coll] + ".json";
}

int run(const sweep_options& o, int argc, char** argv) {
  const int rank = sweep_env_rank(), nranks = sweep_env_size();
  if (rank < 0 || nranks < 1 || rank >= nranks) {
    std::fprintf(stderr, "hcl_bench: set RANK and WORLD_SIZE (and HCL_COMM_ID=host:port)\n");
    return 2;
  }
  hclUniqueId id;
  check(hclGetUniqueId(&id), "hclGetUniqueId");
  hclComm_t raw = nullptr;
  check(hclCommInitRank(&raw, nranks, id, rank), "hclCommInitRank");
  Comm comm(raw);

  const bool memAlloc = std::strcmp(o.alloc, "memalloc") == 0;
  const size_t elems = o.maxBytes / sizeof(float) + 1;
  Buffer send(elems, memAlloc), recv(elems, memAlloc);
  std::vector<double> times(o.maxIters);

  nccl_json::Document doc;
  if (o.jsonPath) {
    doc.args.assign(argv, argv + argc);
    for (char** e = environ; *e; ++e) {
      if (std::strncmp(*e, "HCL_", 4) == 0 || std::strncmp(*e, "NCCL_", 5) == 0) doc.env.emplace_back(*e);
    }
    doc.ncclVersion = HCL_NCCL_VERSION_CODE;
    doc.options = &o;
    doc.warmupIters = sweep_warmup(o.maxIters);
    doc.maxIters = o.maxIters;
    doc.devices = gatherDevices(nranks, comm.get());
  }
  for (int coll = 0; coll < SWEEP_NCOLLS; ++coll) {
    if (!o.colls[coll]) continue;
    doc.rows.clear();
    for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= 2) {
      const size_t count = sweep_count(coll, bytes, nranks);
      if (count == 0) continue;
      sweep_fill(coll, send.data(), recv.data(), count, rank, nranks);
      const int planned = sweep_iters(&o, bytes), warm = sweep_warmup(planned);
      double perCall = sweep_now();
      for (int w = 0; w < warm; ++w) runOnce(coll, send.data(), recv.data(), count, rank, comm.get());
      perCall = maxAcrossRanks((sweep_now() - perCall) / warm, comm.get());
      const int iters = sweep_iters_timed(&o, planned, perCall);
      maxAcrossRanks(0.0, comm.get());  // the loop starts together
      const double loopStart = sweep_now();
      for (int i = 0; i < iters; ++i) {
        const double t0 = sweep_now();
        runOnce(coll, send.data(), recv.data(), count, rank, comm.get());
        times[i] = sweep_now() - t0;
      }
      maxAcrossRanks(0.0, comm.get());  // and ends when every rank is done
      const double loopSeconds = sweep_now() - loopStart;
      // The broadcast root's result is its send buffer.
      const float* result = coll == SWEEP_BROADCAST && rank == SWEEP_ROOT ? send.data() : recv.data();
      const long wrong = sumAcrossRanks(sweep_count_wrong(coll, result, count, rank, nranks), comm.get());
      if (rank == 0) {
        const sweep_row row = sweep_make_row(coll, count, nranks, times.data(), iters, wrong, loopSeconds);
        sweep_print_row(&row);
        doc.rows.push_back(row);
      }
    }
    if (rank == 0 && o.jsonPath) {
      const std::string path = jsonPathFor(o, coll);
      if (!nccl_json::write(path, doc)) std::fprintf(stderr, "hcl_bench: cannot write %s\n", path.c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  sweep_options o;
  if (sweep_parse_args(argc, argv, &o) != 0) return 2;
  if (std::strcmp(o.alloc, "malloc") != 0 && std::strcmp(o.alloc, "memalloc") != 0) {
    std::fprintf(stderr, "hcl_bench: -A takes malloc or memalloc, not '%s'\n", o.alloc);
    return 2;
  }
  try {
    return run(o, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hcl_bench rank %s: %s\n", std::getenv("RANK") ? std::getenv("RANK") : "?", e.what());
    return 1;
  }
}
