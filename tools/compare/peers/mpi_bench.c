/*
 * MPI peer of tools/compare: MPI_Allreduce, MPI_Allgather and
 * MPI_Reduce_scatter_block on floats, timed by the method in sweep.h.
 * Built once against Open MPI and once against MPICH by compare.py.
 */
#include <mpi.h>

#include "sweep.h"

static void run_once(int coll, const float* send, float* recv, size_t count) {
  switch (coll) {
    case SWEEP_ALLREDUCE:
      MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case SWEEP_ALLGATHER:
      MPI_Allgather(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    default:
      MPI_Reduce_scatter_block(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
  }
}

static long count_wrong(int coll, const float* recv, size_t count, int nranks) {
  const float sum = (float)(nranks * (nranks + 1) / 2);
  long wrong = 0;
  if (coll == SWEEP_ALLGATHER) {
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < count; ++i) wrong += recv[(size_t)r * count + i] != (float)(r + 1);
  } else {
    for (size_t i = 0; i < count; ++i) wrong += recv[i] != sum;
  }
  return wrong;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  sweep_options o;
  if (sweep_parse_args(argc, argv, &o) != 0) {
    MPI_Finalize();
    return 2;
  }
  const size_t elems = o.maxBytes / sizeof(float) + 1;
  float* send = (float*)malloc(elems * sizeof(float));
  float* recv = (float*)malloc(elems * sizeof(float));
  double* times = (double*)malloc(sizeof(double) * (size_t)o.maxIters);
  if (!send || !recv || !times) {
    fprintf(stderr, "rank %d: out of memory for %zu bytes\n", rank, o.maxBytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(recv, 0, elems * sizeof(float));
  for (size_t i = 0; i < elems; ++i) send[i] = (float)(rank + 1);

  for (int coll = 0; coll < SWEEP_NCOLLS; ++coll) {
    if (!o.colls[coll]) continue;
    for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= 2) {
      const size_t count = sweep_count(coll, bytes, nranks);
      if (count == 0) continue;
      const int planned = sweep_iters(&o, bytes), warm = sweep_warmup(planned);
      double perCall = sweep_now();
      for (int w = 0; w < warm; ++w) run_once(coll, send, recv, count);
      perCall = (sweep_now() - perCall) / warm;
      MPI_Allreduce(MPI_IN_PLACE, &perCall, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      const int iters = sweep_iters_timed(&o, planned, perCall);
      for (int i = 0; i < iters; ++i) {
        const double t0 = sweep_now();
        run_once(coll, send, recv, count);
        times[i] = sweep_now() - t0;
      }
      long wrong = count_wrong(coll, recv, count, nranks), total = 0;
      MPI_Reduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        const sweep_row row = sweep_make_row(coll, count, nranks, times, iters, total);
        sweep_print_row(&row);
      }
    }
  }
  free(times);
  free(recv);
  free(send);
  MPI_Finalize();
  return 0;
}
