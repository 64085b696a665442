// Gloo peer of tools/compare: gloo::allreduce (ring), gloo::allgather,
// ReduceScatterHalvingDoubling, gloo::broadcast, gloo::reduce and
// gloo::alltoall on floats over Gloo's TCP transport on loopback, timed by the
// method in sweep.h. Ranks are processes started by compare.py with RANK,
// WORLD_SIZE and GLOO_STORE_DIR (a FileStore directory). A collective this
// Gloo lacks is reported as "missing <coll> <why>" instead of rows.
#include <chrono>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#if __has_include(<gloo/broadcast.h>)
#include <gloo/broadcast.h>
#define HAVE_GLOO_BROADCAST 1
#endif
#if __has_include(<gloo/reduce.h>)
#include <gloo/reduce.h>
#define HAVE_GLOO_REDUCE 1
#endif
#if __has_include(<gloo/alltoall.h>)
#include <gloo/alltoall.h>
#define HAVE_GLOO_ALLTOALL 1
#endif
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "sweep.h"

namespace {

using Context = std::shared_ptr<gloo::Context>;
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// Whether this Gloo has the collective (its header was found).
bool available(int coll) {
  switch (coll) {
#ifndef HAVE_GLOO_BROADCAST
    case SWEEP_BROADCAST: return false;
#endif
#ifndef HAVE_GLOO_REDUCE
    case SWEEP_REDUCE: return false;
#endif
#ifndef HAVE_GLOO_ALLTOALL
    case SWEEP_ALLTOALL: return false;
#endif
    default: return true;
  }
}

// One collective at one size, set up once and run many times.
class Op {
 public:
  Op(int coll, const Context& ctx, std::vector<float>& send, std::vector<float>& recv, size_t count)
      : coll_(coll), ctx_(ctx), send_(send), recv_(recv), count_(count) {
    if (coll_ == SWEEP_REDUCESCATTER) {
      const std::vector<int> recvElems(ctx->size, static_cast<int>(count));
      reduceScatter_ = std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
          ctx, std::vector<float*>{recv.data()}, static_cast<int>(count * ctx->size), recvElems);
    }
  }

  void run() {
    switch (coll_) {
      case SWEEP_ALLREDUCE: {
        gloo::AllreduceOptions opts(ctx_);
        opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        opts.setInput(send_.data(), count_);
        opts.setOutput(recv_.data(), count_);
        opts.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
        gloo::allreduce(opts);
        break;
      }
      case SWEEP_ALLGATHER: {
        gloo::AllgatherOptions opts(ctx_);
        opts.setInput(send_.data(), count_);
        opts.setOutput(recv_.data(), count_ * ctx_->size);
        gloo::allgather(opts);
        break;
      }
      case SWEEP_REDUCESCATTER:
        reduceScatter_->run();  // in place on recv: its input is the whole recv buffer
        break;
#ifdef HAVE_GLOO_BROADCAST
      case SWEEP_BROADCAST: {
        gloo::BroadcastOptions opts(ctx_);
        if (ctx_->rank == SWEEP_ROOT) opts.setInput(send_.data(), count_);
        opts.setOutput(recv_.data(), count_);
        opts.setRoot(SWEEP_ROOT);
        gloo::broadcast(opts);
        break;
      }
#endif
#ifdef HAVE_GLOO_REDUCE
      case SWEEP_REDUCE: {
        gloo::ReduceOptions opts(ctx_);
        opts.setInput(send_.data(), count_);
        opts.setOutput(recv_.data(), count_);
        opts.setRoot(SWEEP_ROOT);
        opts.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
        gloo::reduce(opts);
        break;
      }
#endif
#ifdef HAVE_GLOO_ALLTOALL
      case SWEEP_ALLTOALL: {
        gloo::AlltoallOptions opts(ctx_);
        opts.setInput(send_.data(), count_ * ctx_->size);
        opts.setOutput(recv_.data(), count_ * ctx_->size);
        gloo::alltoall(opts);
        break;
      }
#endif
      default:
        throw std::runtime_error(std::string("no Gloo ") + sweep_coll_names[coll_]);
    }
  }

  // Gloo's reduce-scatter works in place, so its input is refreshed first;
  // the barrier makes sure no peer still reads the buffer (sends are async).
  void prepareCheck(float value) {
    if (coll_ != SWEEP_REDUCESCATTER) return;
    gloo::BarrierOptions barrier(ctx_);
    gloo::barrier(barrier);
    std::fill(recv_.begin(), recv_.begin() + count_ * ctx_->size, value);
  }

  long countWrong() const { return sweep_count_wrong(coll_, recv_.data(), count_, ctx_->rank, ctx_->size); }

 private:
  int coll_;
  Context ctx_;
  std::vector<float>& send_;
  std::vector<float>& recv_;
  size_t count_;
  std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> reduceScatter_;
};

// Sums a long across ranks with Gloo itself, to report every rank's errors.
long sumAcrossRanks(const Context& ctx, long value) {
  std::vector<long> in{value}, out{0};
  gloo::AllreduceOptions opts(ctx);
  opts.setInput(in.data(), 1);
  opts.setOutput(out.data(), 1);
  opts.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<long>));
  gloo::allreduce(opts);
  return out[0];
}

double maxAcrossRanks(const Context& ctx, double value) {
  std::vector<double> in{value}, out{0};
  gloo::AllreduceOptions opts(ctx);
  opts.setInput(in.data(), 1);
  opts.setOutput(out.data(), 1);
  opts.setReduceFunction(static_cast<ReduceFn>(&gloo::max<double>));
  gloo::allreduce(opts);
  return out[0];
}

}  // namespace

int main(int argc, char** argv) {
  sweep_options o;
  if (sweep_parse_args(argc, argv, &o) != 0) return 2;
  const int rank = sweep_env_rank(), nranks = sweep_env_size();
  const char* storeDir = std::getenv("GLOO_STORE_DIR");
  if (rank < 0 || nranks < 1 || !storeDir) {
    std::fprintf(stderr, "gloo_bench: set RANK, WORLD_SIZE and GLOO_STORE_DIR\n");
    return 2;
  }
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    ctx->setTimeout(std::chrono::seconds(120));
    gloo::rendezvous::FileStore store(storeDir);
    ctx->connectFullMesh(store, device);

    const size_t elems = o.maxBytes / sizeof(float) + 1;
    std::vector<float> send(elems), recv(elems);
    std::vector<double> times(o.maxIters);
    for (int coll = 0; coll < SWEEP_NCOLLS; ++coll) {
      if (!o.colls[coll]) continue;
      if (!available(coll)) {
        if (rank == 0) std::printf("missing %s not in this Gloo\n", sweep_coll_names[coll]);
        continue;
      }
      for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= 2) {
        const size_t count = sweep_count(coll, bytes, nranks);
        if (count == 0) continue;
        sweep_fill(coll, send.data(), recv.data(), count, rank, nranks);
        Op op(coll, ctx, send, recv, count);
        const int planned = sweep_iters(&o, bytes), warm = sweep_warmup(planned);
        double perCall = sweep_now();
        for (int w = 0; w < warm; ++w) op.run();
        perCall = maxAcrossRanks(ctx, (sweep_now() - perCall) / warm);
        const int iters = sweep_iters_timed(&o, planned, perCall);
        maxAcrossRanks(ctx, 0.0);  // the loop starts together
        const double loopStart = sweep_now();
        for (int i = 0; i < iters; ++i) {
          const double t0 = sweep_now();
          op.run();
          times[i] = sweep_now() - t0;
        }
        maxAcrossRanks(ctx, 0.0);  // and ends when every rank is done
        const double loopSeconds = sweep_now() - loopStart;
        op.prepareCheck(static_cast<float>(rank + 1));
        op.run();
        const long wrong = sumAcrossRanks(ctx, op.countWrong());
        if (rank == 0) {
          const sweep_row row = sweep_make_row(coll, count, nranks, times.data(), iters, wrong, loopSeconds);
          sweep_print_row(&row);
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_bench rank %d: %s\n", rank, e.what());
    return 1;
  }
  return 0;
}
