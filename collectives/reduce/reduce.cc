#include "collectives/reduce/reduce.h"

#include <cassert>

#include "collectives/reduce/reduce_kernels.h"

namespace hcl {
namespace {

using namespace reduce_kernels;

template <class T>
void reduceAs(void* dst, Form df, const void* a, Form af, const void* b, Form bf, size_t count,
              const ReduceSpec& spec) {
  reduceDirect<T>(static_cast<T*>(dst), df, static_cast<const T*>(a), af,
                  static_cast<const T*>(b), bf, count, spec);
}

template <class T>
void convertAs(void* dst, Form df, const void* src, Form sf, size_t count,
               const ReduceSpec& spec) {
  convertDirect<T>(static_cast<T*>(dst), df, static_cast<const T*>(src), sf, count, spec);
}

}  // namespace

void reduce(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm,
            size_t count, const ReduceSpec& spec) {
  assert(spec.nranks >= 1);
  if (count == 0) return;
  switch (spec.type) {
    case hclInt8: return reduceAs<int8_t>(dst, dstForm, a, aForm, b, bForm, count, spec);
    case hclUint8: return reduceAs<uint8_t>(dst, dstForm, a, aForm, b, bForm, count, spec);
    case hclInt32: return reduceAs<int32_t>(dst, dstForm, a, aForm, b, bForm, count, spec);
    case hclUint32: return reduceAs<uint32_t>(dst, dstForm, a, aForm, b, bForm, count, spec);
    case hclInt64: return reduceAs<int64_t>(dst, dstForm, a, aForm, b, bForm, count, spec);
    case hclUint64: return reduceAs<uint64_t>(dst, dstForm, a, aForm, b, bForm, count, spec);
    case hclFloat32: return reduceAs<float>(dst, dstForm, a, aForm, b, bForm, count, spec);
    case hclFloat64: return reduceAs<double>(dst, dstForm, a, aForm, b, bForm, count, spec);
    case hclFloat16:
    case hclBfloat16:
    case hclFloat8e4m3:
    case hclFloat8e5m2: return reduceNarrow(dst, dstForm, a, aForm, b, bForm, count, spec);
    default: assert(!"reduce: invalid data type"); return;
  }
}

void convert(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
             const ReduceSpec& spec) {
  assert(spec.nranks >= 1);
  if (count == 0) return;
  switch (spec.type) {
    case hclInt8: return convertAs<int8_t>(dst, dstForm, src, srcForm, count, spec);
    case hclUint8: return convertAs<uint8_t>(dst, dstForm, src, srcForm, count, spec);
    case hclInt32: return convertAs<int32_t>(dst, dstForm, src, srcForm, count, spec);
    case hclUint32: return convertAs<uint32_t>(dst, dstForm, src, srcForm, count, spec);
    case hclInt64: return convertAs<int64_t>(dst, dstForm, src, srcForm, count, spec);
    case hclUint64: return convertAs<uint64_t>(dst, dstForm, src, srcForm, count, spec);
    case hclFloat32: return convertAs<float>(dst, dstForm, src, srcForm, count, spec);
    case hclFloat64: return convertAs<double>(dst, dstForm, src, srcForm, count, spec);
    case hclFloat16:
    case hclBfloat16:
    case hclFloat8e4m3:
    case hclFloat8e5m2: return convertNarrow(dst, dstForm, src, srcForm, count, spec);
    default: assert(!"convert: invalid data type"); return;
  }
}

}  // namespace hcl
