// Entry point shared by every perf binary; the binary's own file supplies perfCollective().
#include "perf/common/run.h"

int main(int argc, char** argv, char** envp) {
  return hcl::perf::runPerfTest(hcl::perf::perfCollective(), argc, argv, envp);
}
