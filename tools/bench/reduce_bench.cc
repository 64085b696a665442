// Google Benchmark suite for the reduction kernels: GB/s for every data type
// and operator, next to memcpy on the same buffers. Bytes counted per call:
// two inputs read and one output written. Three shapes per pair: "partial"
// (fp32 accumulator op input into an accumulator, a reduce-scatter step),
// "final" (the same into the data type) and "native" (input op input into
// the data type, a 2-rank all-reduce); they differ only for the types that
// accumulate in fp32. Each runs at
// two sizes: 8 MiB, out of the L2 like whole messages, and 256 KiB, in the L2
// like the slices the window and direct algorithms reduce.
//
//   build/tools/bench/hcl_reduce_bench [--benchmark_filter=float32]
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "collectives/reduce/reduce.h"

namespace {

constexpr int64_t kSizes[] = {8 << 20, 256 << 10};

void fill(std::vector<std::byte>& v) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::byte>((i * 7 + 3) & 0x3f);
}

// Values like a training job's: floats in [1, 2) and small integers. Byte
// patterns would make most floats tiny, so a product underflows into
// subnormals and measures the CPU's microcode assists instead of the kernel.
void fillValues(std::vector<std::byte>& v, hclDataType_t type, size_t count) {
  if (!hcl::isFloatType(type)) {
    std::vector<std::byte> small(count * hcl::dataTypeSize(type));
    for (size_t i = 0; i < count; ++i) small[i * hcl::dataTypeSize(type)] = static_cast<std::byte>(1 + i % 3);
    v = std::move(small);
    return;
  }
  const auto value = [](size_t i) { return 1.0 + static_cast<double>(i % 61) / 64.0; };
  if (type == hclFloat64) {
    for (size_t i = 0; i < count; ++i) reinterpret_cast<double*>(v.data())[i] = value(i);
    return;
  }
  std::vector<float> f(count);
  for (size_t i = 0; i < count; ++i) f[i] = static_cast<float>(value(i));
  if (type == hclFloat32) {
    std::memcpy(v.data(), f.data(), count * sizeof(float));
    return;
  }
  hcl::ReduceSpec spec;
  spec.type = type;
  // fp32 accumulates the narrow types
  hcl::convert(v.data(), hcl::Form::Native, f.data(), hcl::Form::Acc, count, spec);
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<std::byte> a(bytes), c(bytes);
  fill(a);
  for (auto _ : state) {
    std::memcpy(c.data(), a.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_Memcpy)->ArgsProduct({{kSizes[0], kSizes[1]}})->Unit(benchmark::kMicrosecond)->UseRealTime();

hcl::ReduceSpec benchSpec(hclDataType_t type, hcl::ReduceKind kind) {
  hcl::ReduceSpec spec;
  spec.type = type;
  spec.kind = kind;
  spec.nranks = 2;
  spec.scalarFloat = 0.5;
  return spec;
}

// The kernel a reduce-scatter step runs: acc = partial (Acc) op input (Native).
void BM_Reduce(benchmark::State& state, hclDataType_t type, hcl::ReduceKind kind, hcl::Form dstForm) {
  const size_t es = hcl::dataTypeSize(type), as = hcl::accumulatorSize(type);
  const size_t count = static_cast<size_t>(state.range(0)) / es;
  std::vector<std::byte> partial(count * as), input(count * es), out(count * std::max(es, as));
  fillValues(input, type, count);
  const hcl::ReduceSpec spec = benchSpec(type, kind);
  hcl::convert(partial.data(), hcl::Form::Acc, input.data(), hcl::Form::Native, count, spec);
  for (auto _ : state) {
    hcl::reduce(out.data(), dstForm, partial.data(), hcl::Form::Acc, input.data(), hcl::Form::Native, count, spec);
    benchmark::ClobberMemory();
  }
  const size_t outBytes = count * (dstForm == hcl::Form::Native ? es : as);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(count * as + count * es + outBytes));
}

// The kernel a 2-rank all-reduce runs: out = input op input, all Native.
void BM_ReduceNative(benchmark::State& state, hclDataType_t type, hcl::ReduceKind kind) {
  const size_t es = hcl::dataTypeSize(type);
  const size_t count = static_cast<size_t>(state.range(0)) / es;
  std::vector<std::byte> a(count * es), b(count * es), out(count * es);
  fillValues(a, type, count);
  fillValues(b, type, count);
  const hcl::ReduceSpec spec = benchSpec(type, kind);
  for (auto _ : state) {
    hcl::reduce(out.data(), hcl::Form::Native, a.data(), hcl::Form::Native, b.data(), hcl::Form::Native, count, spec);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 * static_cast<int64_t>(count * es));
}

void registerAll() {
  const hcl::ReduceKind kinds[] = {hcl::ReduceKind::Sum, hcl::ReduceKind::Prod, hcl::ReduceKind::Max,
                                   hcl::ReduceKind::Min, hcl::ReduceKind::Avg, hcl::ReduceKind::PreMulSum};
  for (int t = 0; t < hclNumTypes; ++t) {
    for (hcl::ReduceKind k : kinds) {
      for (hcl::Form f : {hcl::Form::Acc, hcl::Form::Native}) {
        const std::string name = std::string("BM_Reduce/") + hcl::dataTypeName(t) + "/" + hcl::reduceKindName(k) +
                                 (f == hcl::Form::Native ? "/final" : "/partial");
        benchmark::RegisterBenchmark(name.c_str(), BM_Reduce, static_cast<hclDataType_t>(t), k, f)
            ->ArgsProduct({{kSizes[0], kSizes[1]}})
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
      const std::string native =
          std::string("BM_Reduce/") + hcl::dataTypeName(t) + "/" + hcl::reduceKindName(k) + "/native";
      benchmark::RegisterBenchmark(native.c_str(), BM_ReduceNative, static_cast<hclDataType_t>(t), k)
          ->ArgsProduct({{kSizes[0], kSizes[1]}})
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
