/*
 * The measurement method shared by every peer benchmark of tools/compare, so
 * that HCL, MPI and Gloo are timed the same way:
 *   - sizes from -b to -e, doubling; a size is nccl-tests' "size" column
 *     (allgather: the whole receive buffer, reducescatter and alltoall: the
 *     whole send buffer, the others: the buffer);
 *   - float data, sum, root 0; sweep_fill gives inputs whose results are exact
 *     and sweep_count_wrong checks them;
 *   - per size, planned = clamp(budget / size, min, max); max(1, planned / 10)
 *     warm-up iterations; then iters = clamp(time budget / the slowest rank's
 *     warm-up time per call, min, planned) timed iterations, so a slow peer
 *     does not run for minutes (all ranks agree on the count);
 *   - each iteration is timed alone and the row reports rank 0's median;
 *   - the timed loop as a whole is timed too, from a synchronisation of all
 *     ranks before its first call to one after its last, and the row reports
 *     that wall time divided by the iterations: the time per call the ranks
 *     sustain together. The two differ where a call can return before its
 *     peers have done their part (broadcast, reduce): a root that buffers
 *     its sends has short calls while the loop as a whole is not faster;
 *   - busbw uses nccl-tests' factors: allreduce 2(n-1)/n, broadcast and
 *     reduce 1, the others (n-1)/n.
 * Rows go to stdout as
 *   row <coll> <size> <count> <iters> <median_us> <algbw> <busbw> <wrong> <loop_us>
 * Header-only and valid C and C++, because mpi_bench is C.
 */
#ifndef HCL_COMPARE_SWEEP_H_
#define HCL_COMPARE_SWEEP_H_

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
  SWEEP_ALLREDUCE = 0,
  SWEEP_ALLGATHER = 1,
  SWEEP_REDUCESCATTER = 2,
  SWEEP_BROADCAST = 3,
  SWEEP_REDUCE = 4,
  SWEEP_ALLTOALL = 5,
  SWEEP_NCOLLS = 6
};

#define SWEEP_ROOT 0
#define SWEEP_COLL_LIST "allreduce,allgather,reducescatter,broadcast,reduce,alltoall"

typedef struct {
  int colls[SWEEP_NCOLLS];
  size_t minBytes;
  size_t maxBytes;
  size_t budgetBytes;
  int minIters;
  int maxIters;
  double timeBudget;    /* -T seconds of timed calls per size (at least minIters) */
  const char* jsonPath; /* -J, only hcl_bench writes it */
  const char* alloc;    /* -A malloc|memalloc, only hcl_bench uses it */
} sweep_options;

static const char* const sweep_coll_names[SWEEP_NCOLLS] = {"allreduce", "allgather", "reducescatter",
                                                            "broadcast", "reduce",    "alltoall"};

static inline size_t sweep_parse_size(const char* text) {
  char* end = NULL;
  double value = strtod(text, &end);
  switch (end && *end ? *end : ' ') {
    case 'K': case 'k': value *= 1024.0; break;
    case 'M': case 'm': value *= 1024.0 * 1024.0; break;
    case 'G': case 'g': value *= 1024.0 * 1024.0 * 1024.0; break;
    default: break;
  }
  return value > 0 ? (size_t)value : 0;
}

static inline int sweep_parse_colls(const char* text, int* colls) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  memset(colls, 0, sizeof(int) * SWEEP_NCOLLS);
  for (char* tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int found = 0;
    for (int c = 0; c < SWEEP_NCOLLS; ++c) {
      if (strcmp(tok, sweep_coll_names[c]) == 0) colls[c] = found = 1;
    }
    if (!found) {
      fprintf(stderr, "unknown collective '%s' (" SWEEP_COLL_LIST ")\n", tok);
      return -1;
    }
  }
  return 0;
}

static inline void sweep_usage(const char* prog) {
  fprintf(stderr,
          "usage: %s [-c " SWEEP_COLL_LIST "]\n"
          "          [-b MINBYTES] [-e MAXBYTES]\n"
          "          [-B BUDGET_BYTES] [-T SECONDS] [-m MIN_ITERS] [-n MAX_ITERS] [-J FILE.json]\n"
          "          [-A malloc|memalloc]\n"
          "Sizes take K/M/G suffixes. Ranks come from MPI, or RANK/WORLD_SIZE.\n",
          prog);
}

/* Returns 0 on success, -1 on a bad command line (usage already printed). */
static inline int sweep_parse_args(int argc, char** argv, sweep_options* o) {
  memset(o, 0, sizeof *o);
  o->colls[SWEEP_ALLREDUCE] = 1;
  o->minBytes = 8;
  o->maxBytes = 256u << 20;
  o->budgetBytes = 512u << 20;
  o->minIters = 3;
  o->timeBudget = 1.0;
  o->maxIters = 20000;
  o->alloc = "malloc";
  int c;
  optind = 1;
  while ((c = getopt(argc, argv, "c:b:e:B:T:m:n:J:A:h")) != -1) {
    switch (c) {
      case 'c': if (sweep_parse_colls(optarg, o->colls) != 0) return -1; break;
      case 'b': o->minBytes = sweep_parse_size(optarg); break;
      case 'e': o->maxBytes = sweep_parse_size(optarg); break;
      case 'B': o->budgetBytes = sweep_parse_size(optarg); break;
      case 'T': o->timeBudget = atof(optarg); break;
      case 'm': o->minIters = atoi(optarg); break;
      case 'n': o->maxIters = atoi(optarg); break;
      case 'J': o->jsonPath = optarg; break;
      case 'A': o->alloc = optarg; break;
      default: sweep_usage(argv[0]); return -1;
    }
  }
  if (o->minBytes == 0 || o->maxBytes < o->minBytes || o->minIters < 1 || o->maxIters < o->minIters) {
    fprintf(stderr, "%s: need 0 < -b <= -e and 1 <= -m <= -n\n", argv[0]);
    return -1;
  }
  return 0;
}

static inline int sweep_iters(const sweep_options* o, size_t bytes) {
  size_t n = o->budgetBytes / (bytes ? bytes : 1);
  if (n < (size_t)o->minIters) n = (size_t)o->minIters;
  if (n > (size_t)o->maxIters) n = (size_t)o->maxIters;
  return (int)n;
}

static inline int sweep_warmup(int iters) { return iters / 10 > 1 ? iters / 10 : 1; }

/* The timed iterations, given the planned count and the slowest rank's
 * warm-up seconds per call (every rank must pass the same value). */
static inline int sweep_iters_timed(const sweep_options* o, int planned, double secondsPerCall) {
  if (o->timeBudget <= 0 || secondsPerCall <= 0) return planned;
  const double fit = o->timeBudget / secondsPerCall;
  if (fit >= planned) return planned;
  return fit < o->minIters ? o->minIters : (int)fit;
}

static inline double sweep_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int sweep_cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : (x > y ? 1 : 0);
}

/* Sorts v. */
static inline double sweep_median(double* v, int n) {
  qsort(v, (size_t)n, sizeof(double), sweep_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline double sweep_busbw_factor(int coll, int nranks) {
  if (coll == SWEEP_BROADCAST || coll == SWEEP_REDUCE) return 1.0;
  if (nranks <= 1) return 0.0;
  return coll == SWEEP_ALLREDUCE ? 2.0 * (nranks - 1) / nranks : (double)(nranks - 1) / nranks;
}

/* Whether the collective's count is per rank (a share of the size). */
static inline int sweep_per_rank(int coll) {
  return coll == SWEEP_ALLGATHER || coll == SWEEP_REDUCESCATTER || coll == SWEEP_ALLTOALL;
}

/* Float elements: the count for allreduce, broadcast and reduce, the send
 * count for allgather, the receive count for reducescatter, the count per
 * peer for alltoall. 0: the size is too small. */
static inline size_t sweep_count(int coll, size_t bytes, int nranks) {
  const size_t elems = bytes / sizeof(float);
  return sweep_per_rank(coll) ? elems / (size_t)nranks : elems;
}

/* The bytes the row stands for, given the count actually used. */
static inline size_t sweep_row_bytes(int coll, size_t count, int nranks) {
  return count * sizeof(float) * (sweep_per_rank(coll) ? (size_t)nranks : 1);
}

/* Input element i of `rank`: rank + 1, except for alltoall, where the block
 * for peer j holds rank * nranks + j + 1, so every block is told apart. */
static inline float sweep_send_value(int coll, size_t i, size_t count, int rank, int nranks) {
  return coll == SWEEP_ALLTOALL ? (float)(rank * nranks + (int)(i / count) + 1) : (float)(rank + 1);
}

/* Fills the send buffer (sweep_row_bytes of it) and clears as much of the
 * receive buffer, so that a result left by an earlier size cannot pass. */
static inline void sweep_fill(int coll, float* send, float* recv, size_t count, int rank, int nranks) {
  const size_t n = sweep_row_bytes(coll, count, nranks) / sizeof(float);
  for (size_t i = 0; i < n; ++i) send[i] = sweep_send_value(coll, i, count, rank, nranks);
  memset(recv, 0, n * sizeof(float));
}

/* Wrong elements of `rank`'s result. Reduce is only checked at the root. */
static inline long sweep_count_wrong(int coll, const float* recv, size_t count, int rank, int nranks) {
  const float sum = (float)(nranks * (nranks + 1) / 2);
  long wrong = 0;
  switch (coll) {
    case SWEEP_ALLGATHER:
      for (size_t i = 0; i < count * (size_t)nranks; ++i) wrong += recv[i] != (float)(i / count + 1);
      break;
    case SWEEP_ALLTOALL:
      for (size_t i = 0; i < count * (size_t)nranks; ++i)
        wrong += recv[i] != sweep_send_value(coll, (size_t)rank * count, count, (int)(i / count), nranks);
      break;
    case SWEEP_BROADCAST:
      for (size_t i = 0; i < count; ++i) wrong += recv[i] != (float)(SWEEP_ROOT + 1);
      break;
    case SWEEP_REDUCE:
      if (rank != SWEEP_ROOT) break;
      /* fall through */
    default:
      for (size_t i = 0; i < count; ++i) wrong += recv[i] != sum;
      break;
  }
  return wrong;
}

typedef struct {
  int coll;
  size_t bytes;
  size_t count;
  int iters;
  double timeUs;
  double algbw;
  double busbw;
  long wrong;
  double loopUs; /* the synchronised loop's wall time per call */
} sweep_row;

/* Builds a row from the iteration times (sorted in place) and the wall time
 * of the whole synchronised loop. */
static inline sweep_row sweep_make_row(int coll, size_t count, int nranks, double* times, int iters, long wrong,
                                       double loopSeconds) {
  sweep_row r;
  r.coll = coll;
  r.bytes = sweep_row_bytes(coll, count, nranks);
  r.count = count;
  r.iters = iters;
  const double median = sweep_median(times, iters);
  r.timeUs = median * 1e6;
  r.algbw = median > 0 ? (double)r.bytes / median / 1e9 : 0.0;
  r.busbw = r.algbw * sweep_busbw_factor(coll, nranks);
  r.wrong = wrong;
  r.loopUs = iters > 0 ? loopSeconds / iters * 1e6 : 0.0;
  return r;
}

static inline void sweep_print_row(const sweep_row* r) {
  printf("row %s %zu %zu %d %.6g %.6g %.6g %ld %.6g\n", sweep_coll_names[r->coll], r->bytes, r->count, r->iters,
         r->timeUs, r->algbw, r->busbw, r->wrong, r->loopUs);
  fflush(stdout);
}

/* Ranks from the usual launcher variables; -1 when unset. */
static inline int sweep_env_int(const char* const* names) {
  for (; *names; ++names) {
    const char* v = getenv(*names);
    if (v && *v) return atoi(v);
  }
  return -1;
}

static inline int sweep_env_rank(void) {
  static const char* const names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", NULL};
  return sweep_env_int(names);
}

static inline int sweep_env_size(void) {
  static const char* const names[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL};
  return sweep_env_int(names);
}

#endif /* HCL_COMPARE_SWEEP_H_ */
