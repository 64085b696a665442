/*
 * MPI peer of tools/compare: MPI_Allreduce, MPI_Allgather,
 * MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce and MPI_Alltoall on floats,
 * timed by the method in sweep.h.
 * Built once against Open MPI and once against MPICH by compare.py.
 */
#include <mpi.h>

#include "sweep.h"

/* MPI_Bcast works in place: the root sends its send buffer, the others
 * receive into recv. */
static void run_once(int coll, float* send, float* recv, size_t count, int rank) {
  switch (coll) {
    case SWEEP_ALLREDUCE:
      MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case SWEEP_ALLGATHER:
      MPI_Allgather(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case SWEEP_REDUCESCATTER:
      MPI_Reduce_scatter_block(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case SWEEP_BROADCAST:
      MPI_Bcast(rank == SWEEP_ROOT ? send : recv, (int)count, MPI_FLOAT, SWEEP_ROOT, MPI_COMM_WORLD);
      break;
    case SWEEP_REDUCE:
      MPI_Reduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, SWEEP_ROOT, MPI_COMM_WORLD);
      break;
    default:
      MPI_Alltoall(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
      break;
  }
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

  for (int coll = 0; coll < SWEEP_NCOLLS; ++coll) {
    if (!o.colls[coll]) continue;
    for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= 2) {
      const size_t count = sweep_count(coll, bytes, nranks);
      if (count == 0) continue;
      sweep_fill(coll, send, recv, count, rank, nranks);
      const int planned = sweep_iters(&o, bytes), warm = sweep_warmup(planned);
      double perCall = sweep_now();
      for (int w = 0; w < warm; ++w) run_once(coll, send, recv, count, rank);
      perCall = (sweep_now() - perCall) / warm;
      MPI_Allreduce(MPI_IN_PLACE, &perCall, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      const int iters = sweep_iters_timed(&o, planned, perCall);
      MPI_Barrier(MPI_COMM_WORLD);
      const double loopStart = sweep_now();
      for (int i = 0; i < iters; ++i) {
        const double t0 = sweep_now();
        run_once(coll, send, recv, count, rank);
        times[i] = sweep_now() - t0;
      }
      MPI_Barrier(MPI_COMM_WORLD);
      const double loopSeconds = sweep_now() - loopStart;
      /* The broadcast root's result is its send buffer. */
      const float* result = coll == SWEEP_BROADCAST && rank == SWEEP_ROOT ? send : recv;
      long wrong = sweep_count_wrong(coll, result, count, rank, nranks), total = 0;
      MPI_Reduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        const sweep_row row = sweep_make_row(coll, count, nranks, times, iters, total, loopSeconds);
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
