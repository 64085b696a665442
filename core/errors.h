// Turning a Status into the C API's result: remember the text for
// hclGetLastError, log it, return the code.
#pragma once

#include "core/status.h"
#include "hcl.h"

namespace hcl {

// Records `s` (already prefixed with the call name) as the last error of the
// calling thread and, when given, of `comm`. Returns s.code().
hclResult_t report(const Status& s, hclComm* comm = nullptr);

const char* lastErrorText(hclComm* comm);
const char* resultString(hclResult_t r);

}  // namespace hcl
