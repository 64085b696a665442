// How this process was started and how it finds the others.
//
//  * MPI (builds with HCL_PERF_MPI, run under Open MPI's mpirun): MPI gives
//    the process index and broadcasts process 0's unique id. Nothing else
//    goes through MPI.
//  * Any other launcher that sets RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/SIZE,
//    PMI_RANK/PMI_SIZE or SLURM_PROCID/SLURM_NTASKS: HCL_COMM_ID=host:port
//    names the bootstrap root, so hclGetUniqueId gives every process the
//    same id and rank 0 runs the root.
//  * Neither: one process.
#pragma once

#include <string>

#include "core/status.h"
#include "hcl.h"

namespace hcl::perf {

struct LaunchInfo {
  int proc = 0;
  int nProcs = 1;
  bool mpi = false;
  std::string source = "single process";  // what told us proc and nProcs
};

Status startLaunch(int& argc, char**& argv, LaunchInfo& out);
Status agreeOnUniqueId(const LaunchInfo& launch, hclUniqueId& id);
void finishLaunch(const LaunchInfo& launch);
// Ends the whole job quickly after a failure (MPI_Abort under MPI).
[[noreturn]] void abortLaunch(const LaunchInfo& launch, int code);

// NCCL_TESTS_SPLIT_MASK / NCCL_TESTS_SPLIT: the group (color) of process `proc`.
int splitColor(int proc);

}  // namespace hcl::perf
