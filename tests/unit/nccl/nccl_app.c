/*
 * An ordinary NCCL program on host memory: forks N ranks (default 3) that
 * run allreduce, allgather, broadcast, reducescatter, alltoall and send/recv
 * and check every result. Built twice: against HCL's nccl.h and libnccl.so.2,
 * and against NVIDIA's header and library, then run with HCL's library in
 * LD_PRELOAD.
 *
 *   nccl_app [--ranks N] [--expect-lib PATH] [--expect-log] [--root-in-rank0]
 *
 * --expect-lib: fail unless ncclAllReduce comes from the library at PATH.
 * --expect-log: run the parent with NCCL_DEBUG=INFO into a temporary file and
 *               fail unless the log names HCL's version.
 * --root-in-rank0: set NCCL_COMM_ID to a free loopback port first, so that
 *               rank 0 runs the bootstrap root and the parent forks with no
 *               thread of the library running. For sanitizer builds: GCC 12's
 *               ASan allocator is not fork-safe, and a child forked while the
 *               root thread allocates would wait forever on its lock.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <nccl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COUNT 1031

static int g_rank = -1;

#define NCCL_OK(comm, call)                                                                               \
  do {                                                                                                    \
    ncclResult_t r_ = (call);                                                                             \
    if (r_ != ncclSuccess) {                                                                              \
      fprintf(stderr, "rank %d: %s failed: %s: %s\n", g_rank, #call, ncclGetErrorString(r_),             \
              ncclGetLastError(comm));                                                                    \
      return 1;                                                                                           \
    }                                                                                                     \
  } while (0)

#define EXPECT_EQ_AT(what, i, got, want)                                                                  \
  do {                                                                                                    \
    if ((got) != (want)) {                                                                                \
      fprintf(stderr, "rank %d: %s[%zu] is %.17g, expected %.17g\n", g_rank, what, (size_t)(i),          \
              (double)(got), (double)(want));                                                             \
      return 1;                                                                                           \
    }                                                                                                     \
  } while (0)

static int run_collectives(ncclComm_t comm, int rank, int n) {
  size_t i;
  int p;
  float* fsend = malloc(COUNT * sizeof(float));
  float* frecv = malloc(COUNT * sizeof(float));
  int32_t* isend = malloc((size_t)n * COUNT * sizeof(int32_t));
  int32_t* irecv = malloc((size_t)n * COUNT * sizeof(int32_t));
  double* dbuf = malloc(COUNT * sizeof(double));
  int64_t* lsend = malloc((size_t)n * COUNT * sizeof(int64_t));
  int64_t* lrecv = malloc((size_t)n * COUNT * sizeof(int64_t));
  cudaStream_t stream = NULL;
  int rc = 1;
  if (!fsend || !frecv || !isend || !irecv || !dbuf || !lsend || !lrecv) goto out;

  /* allreduce, float sum: small integers add exactly. */
  for (i = 0; i < COUNT; ++i) fsend[i] = (float)((rank + 1) * (int)(i % 7));
  NCCL_OK(comm, ncclAllReduce(fsend, frecv, COUNT, ncclFloat, ncclSum, comm, stream));
  for (i = 0; i < COUNT; ++i) EXPECT_EQ_AT("allreduce", i, frecv[i], (float)((i % 7) * n * (n + 1) / 2));

  /* allgather, int32 */
  for (i = 0; i < COUNT; ++i) isend[i] = rank * 100000 + (int32_t)i;
  NCCL_OK(comm, ncclAllGather(isend, irecv, COUNT, ncclInt32, comm, stream));
  for (p = 0; p < n; ++p)
    for (i = 0; i < COUNT; ++i) EXPECT_EQ_AT("allgather", p * COUNT + i, irecv[p * COUNT + i], p * 100000 + (int32_t)i);

  /* broadcast from the last rank, double, in place */
  for (i = 0; i < COUNT; ++i) dbuf[i] = rank == n - 1 ? 0.25 * (double)i : -1.0;
  NCCL_OK(comm, ncclBroadcast(dbuf, dbuf, COUNT, ncclDouble, n - 1, comm, stream));
  for (i = 0; i < COUNT; ++i) EXPECT_EQ_AT("broadcast", i, dbuf[i], 0.25 * (double)i);

  /* reducescatter, int32 sum: rank r gets block r of the element-wise sum */
  for (i = 0; i < (size_t)n * COUNT; ++i) isend[i] = rank + (int32_t)i;
  NCCL_OK(comm, ncclReduceScatter(isend, irecv, COUNT, ncclInt32, ncclSum, comm, stream));
  for (i = 0; i < COUNT; ++i)
    EXPECT_EQ_AT("reducescatter", i, irecv[i], n * (rank * COUNT + (int32_t)i) + n * (n - 1) / 2);

  /* alltoall, int64: block p of rank r goes to rank p as block r */
  for (p = 0; p < n; ++p)
    for (i = 0; i < COUNT; ++i) lsend[p * COUNT + i] = (int64_t)rank * 1000000 + p * 10000 + (int64_t)i;
  NCCL_OK(comm, ncclAlltoAll(lsend, lrecv, COUNT, ncclInt64, comm, stream));
  for (p = 0; p < n; ++p)
    for (i = 0; i < COUNT; ++i)
      EXPECT_EQ_AT("alltoall", p * COUNT + i, lrecv[p * COUNT + i], (int64_t)p * 1000000 + rank * 10000 + (int64_t)i);

  /* send/recv around a ring, both directions of each link in one group */
  for (i = 0; i < COUNT; ++i) isend[i] = rank * 7 + (int32_t)i;
  NCCL_OK(comm, ncclGroupStart());
  NCCL_OK(comm, ncclSend(isend, COUNT, ncclInt32, (rank + 1) % n, comm, stream));
  NCCL_OK(comm, ncclRecv(irecv, COUNT, ncclInt32, (rank + n - 1) % n, comm, stream));
  NCCL_OK(comm, ncclGroupEnd());
  for (i = 0; i < COUNT; ++i) EXPECT_EQ_AT("recv", i, irecv[i], ((rank + n - 1) % n) * 7 + (int32_t)i);
  rc = 0;
out:
  free(fsend);
  free(frecv);
  free(isend);
  free(irecv);
  free(dbuf);
  free(lsend);
  free(lrecv);
  return rc;
}

static int run_rank(int rank, int n, ncclUniqueId id) {
  ncclComm_t comm = NULL;
  int count = 0, me = -1, version = 0, rc;
  g_rank = rank;
  NCCL_OK(comm, ncclGetVersion(&version));
  if (version != NCCL_VERSION_CODE) {
    fprintf(stderr, "rank %d: ncclGetVersion says %d, the header %d\n", rank, version, NCCL_VERSION_CODE);
    return 1;
  }
  NCCL_OK(comm, ncclCommInitRank(&comm, n, id, rank));
  NCCL_OK(comm, ncclCommCount(comm, &count));
  NCCL_OK(comm, ncclCommUserRank(comm, &me));
  if (count != n || me != rank) {
    fprintf(stderr, "rank %d: communicator says rank %d of %d\n", rank, me, count);
    return 1;
  }
  rc = run_collectives(comm, rank, n);
  NCCL_OK(comm, ncclCommDestroy(comm));
  return rc;
}

/* 1 when ncclAllReduce was resolved to the library at `path`. */
static int check_library(const char* path) {
  Dl_info info;
  char want[PATH_MAX], got[PATH_MAX];
  if (!dladdr((const void*)(uintptr_t)&ncclAllReduce, &info) || !info.dli_fname) {
    fprintf(stderr, "nccl_app: dladdr cannot place ncclAllReduce\n");
    return 0;
  }
  if (!realpath(path, want) || !realpath(info.dli_fname, got)) {
    fprintf(stderr, "nccl_app: cannot resolve %s or %s\n", path, info.dli_fname);
    return 0;
  }
  printf("nccl_app: ncclAllReduce comes from %s\n", got);
  if (strcmp(want, got) != 0) {
    fprintf(stderr, "nccl_app: expected ncclAllReduce from %s\n", want);
    return 0;
  }
  return 1;
}

static int file_contains(const char* path, const char* needle) {
  char line[4096];
  int found = 0;
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

/* A loopback port nothing listens on now, or 0. */
static int free_loopback_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
  if (fd < 0) return 0;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr*)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr*)&a, &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

static void log_path(char* out, size_t size, const char* dir, pid_t pid) {
  snprintf(out, size, "%s/nccl_app.%ld.log", dir, (long)pid);
}

int main(int argc, char** argv) {
  int n = 3, r, i, failed = 0, expect_log = 0, root_in_rank0 = 0;
  const char* expect_lib = NULL;
  const char* tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char log_pattern[PATH_MAX], log_file[PATH_MAX];
  pid_t pids[64];
  ncclUniqueId id;
  time_t deadline;

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) n = atoi(argv[++i]);
    else if (strcmp(argv[i], "--expect-lib") == 0 && i + 1 < argc) expect_lib = argv[++i];
    else if (strcmp(argv[i], "--expect-log") == 0) expect_log = 1;
    else if (strcmp(argv[i], "--root-in-rank0") == 0) root_in_rank0 = 1;
    else {
      fprintf(stderr, "usage: %s [--ranks N] [--expect-lib PATH] [--expect-log] [--root-in-rank0]\n", argv[0]);
      return 2;
    }
  }
  if (n < 1 || n > 64) return 2;
  if (expect_lib && !check_library(expect_lib)) return 1;
  if (expect_log) {
    snprintf(log_pattern, sizeof log_pattern, "%s/nccl_app.%%p.log", tmp);
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT", 1);
    setenv("NCCL_DEBUG_FILE", log_pattern, 1);
  }

  if (root_in_rank0) {
    char where[32];
    const int port = free_loopback_port();
    if (port == 0) return 1;
    snprintf(where, sizeof where, "127.0.0.1:%d", port);
    setenv("NCCL_COMM_ID", where, 1);
  }
  g_rank = -1;
  NCCL_OK(NULL, ncclGetUniqueId(&id));
  fflush(stdout);
  fflush(stderr);
  for (r = 0; r < n; ++r) {
    pids[r] = fork();
    if (pids[r] < 0) return 1;
    if (pids[r] == 0) _exit(run_rank(r, n, id));
  }
  deadline = time(NULL) + 120;
  for (r = 0; r < n; ++r) {
    int status = 0;
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (time(NULL) > deadline) {
        fprintf(stderr, "nccl_app: rank %d timed out\n", r);
        for (i = 0; i < n; ++i) kill(pids[i], SIGKILL);
      }
      usleep(2000);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "nccl_app: rank %d failed (status %d)\n", r, status);
      failed = 1;
    }
  }
  if (expect_log) {
    log_path(log_file, sizeof log_file, tmp, getpid());
    if (!file_contains(log_file, "HCL version")) {
      fprintf(stderr, "nccl_app: the NCCL_DEBUG=INFO log %s does not name HCL's version\n", log_file);
      failed = 1;
    } else {
      printf("nccl_app: the NCCL_DEBUG=INFO log names HCL's version\n");
    }
    unlink(log_file);
    for (r = 0; r < n; ++r) {
      log_path(log_file, sizeof log_file, tmp, pids[r]);
      unlink(log_file);
    }
  }
  if (!failed) printf("nccl_app: %d ranks passed\n", n);
  return failed;
}
