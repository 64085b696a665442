#include "core/redop.h"

#include <fmt/format.h>

#include <cstring>

#include "collectives/reduce/float_formats.h"

namespace hcl {

void readScalar(hclDataType_t type, const void* p, double& f, int64_t& i, uint64_t& u) {
  f = 0;
  i = 0;
  u = 0;
  auto load = [p](auto& v) { std::memcpy(&v, p, sizeof v); };
  switch (type) {
    case hclInt8: { int8_t v; load(v); i = v; break; }
    case hclUint8: { uint8_t v; load(v); u = v; break; }
    case hclInt32: { int32_t v; load(v); i = v; break; }
    case hclUint32: { uint32_t v; load(v); u = v; break; }
    case hclInt64: { int64_t v; load(v); i = v; break; }
    case hclUint64: { uint64_t v; load(v); u = v; break; }
    case hclFloat16: { uint16_t v; load(v); f = halfToFloat(v); break; }
    case hclBfloat16: { uint16_t v; load(v); f = bf16ToFloat(v); break; }
    case hclFloat8e4m3: { uint8_t v; load(v); f = e4m3ToFloat(v); break; }
    case hclFloat8e5m2: { uint8_t v; load(v); f = e5m2ToFloat(v); break; }
    case hclFloat32: { float v; load(v); f = v; break; }
    case hclFloat64: { double v; load(v); f = v; break; }
    default: break;
  }
}

namespace {
// Entries a table may hold, and the bits of the salt: together they keep
// every op value above the built-ins and within hclMaxRedOp.
constexpr size_t kMaxEntries = size_t{1} << 20;
constexpr uint32_t kSaltBits = 30;
static_assert(hclNumOps + (uint64_t{1} << kSaltBits) <= uint64_t{hclMaxRedOp});

uint32_t saltFor(const void* table) {
  uint64_t h = reinterpret_cast<uintptr_t>(table);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return static_cast<uint32_t>(h) & ((uint32_t{1} << kSaltBits) - 1);
}
}  // namespace

RedOpTable::RedOpTable() : salt_(saltFor(this)) {}

long RedOpTable::indexOf(int op) const {
  if (op < hclNumOps) return -1;
  const uint32_t index = static_cast<uint32_t>(op - hclNumOps) ^ salt_;
  if (index >= entries_.size() || !entries_[index]) return -1;
  return static_cast<long>(index);
}

Status RedOpTable::create(hclDataType_t type, const void* scalar, hclScalarResidence_t residence,
                          hclRedOp_t* out) {
  Entry e{type, residence, scalar, 0, 0, 0};
  if (residence == hclScalarHostImmediate) readScalar(type, scalar, e.valueFloat, e.valueInt, e.valueUint);
  std::lock_guard lock(mutex_);
  size_t index = 0;
  while (index < entries_.size() && entries_[index]) ++index;
  if (index >= kMaxEntries) {
    return invalidUsage(fmt::format("too many reduction operators on this communicator ({})", kMaxEntries));
  }
  if (index == entries_.size()) entries_.emplace_back();
  entries_[index] = e;
  *out = static_cast<hclRedOp_t>(hclNumOps + static_cast<int>(static_cast<uint32_t>(index) ^ salt_));
  return {};
}

Status RedOpTable::destroy(hclRedOp_t op) {
  std::lock_guard lock(mutex_);
  const long index = indexOf(op);
  if (index < 0) {
    return invalidArgument(fmt::format("op {} is not an operator created on this communicator", static_cast<int>(op)));
  }
  entries_[static_cast<size_t>(index)].reset();
  return {};
}

bool RedOpTable::isValid(int op) const {
  if (op >= 0 && op < hclNumOps) return true;
  std::lock_guard lock(mutex_);
  return indexOf(op) >= 0;
}

Status RedOpTable::resolve(hclRedOp_t op, hclDataType_t type, int nranks, ReduceSpec& out,
                           const void** deferredScalar) const {
  out = ReduceSpec{};
  out.type = type;
  out.nranks = nranks;
  switch (op) {
    case hclSum: out.kind = ReduceKind::Sum; return {};
    case hclProd: out.kind = ReduceKind::Prod; return {};
    case hclMax: out.kind = ReduceKind::Max; return {};
    case hclMin: out.kind = ReduceKind::Min; return {};
    case hclAvg: out.kind = ReduceKind::Avg; return {};
    default: break;
  }
  std::lock_guard lock(mutex_);
  const long index = indexOf(op);
  if (index < 0) {
    return invalidArgument(fmt::format("op {} is not a valid reduction operator (built-in 0..4 or one from hclRedOpCreatePreMulSum on this communicator)", static_cast<int>(op)));
  }
  const Entry& e = *entries_[static_cast<size_t>(index)];
  if (e.type != type) {
    return invalidArgument(fmt::format("op {} was created for datatype {} but is used with {}",
                                       static_cast<int>(op), dataTypeName(e.type), dataTypeName(type)));
  }
  out.kind = ReduceKind::PreMulSum;
  if (e.residence == hclScalarHostImmediate) {
    out.scalarFloat = e.valueFloat;
    out.scalarInt = e.valueInt;
    out.scalarUint = e.valueUint;
  } else if (deferredScalar) {
    *deferredScalar = e.pointer;
  } else {
    readScalar(type, e.pointer, out.scalarFloat, out.scalarInt, out.scalarUint);
  }
  return {};
}

}  // namespace hcl
