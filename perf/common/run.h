// The whole run of one perf binary: options, launch, communicators, device
// report, benchmark threads, footer and exit code.
#pragma once

#include "perf/common/collective.h"

namespace hcl::perf {

// Returns the process exit code: 0, or 1 on wrong results, a busbw below
// NCCL_TESTS_MIN_BW, a failed call or bad options.
int runPerfTest(const CollectiveTest& coll, int argc, char** argv, char** envp);

}  // namespace hcl::perf
