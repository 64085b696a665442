// Hot reduction loops are compiled for three x86-64 levels (baseline SSE2,
// v3 = AVX2/FMA/F16C, v4 = AVX-512) and the loader picks the widest the CPU
// runs (an ifunc per loop), so one build is both portable and fast: on an
// AVX-512 machine bf16/fp16 reductions run about twice as fast as SSE2.
// Elementwise loops give the same bits at every level, and the reduce
// library is built with -ffp-contract=off so that no level fuses a
// multiply into an add.
#pragma once

// Not under TSan: GCC instruments the resolver it generates, and the loader
// runs resolvers before TSan has set up the thread, which crashes at load.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(HCL_NO_ISA_CLONES)
#define HCL_ISA_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define HCL_ISA_CLONES
#endif
