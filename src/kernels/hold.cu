// A kernel that does nothing but wait on the GPU for a given number of nanoseconds (by
// the GPU's global timer), launched as one thread. The measured tier's timings
// (src/bwd_data/engine.rs) launch it before the calls they time: while it waits, the
// host issues the calls and the events between them, which then run back to back, so
// that each call's events time the GPU's work alone and not the host's launch of it.
// A wait that ends before the host has issued everything only lets the GPU start
// early; it never blocks the host.
//
// scripts/gen_ptx.py compiles the entry point (hold_ns) into the packs of PTX and
// cubins committed beside this file, as for depthwise_dgrad.cu.

typedef unsigned long long u64;

#define HOLD(NAME, T)                                                              \
    extern "C" __global__ void NAME(T ns) {                                        \
        T start, now;                                                              \
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));                  \
        do {                                                                       \
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));                \
        } while (now - start < ns);                                                \
    }

#define ENTRIES(SUFFIX, T)                                                          \
    HOLD(hold_##SUFFIX, T)

ENTRIES(ns, u64)
