// Backward data of a depthwise convolution (one input channel per group, groups = C,
// K = C * M filters), NCHW / NCDHW packed operands; 2-d problems run with
// D = OD = KD = 1:
//
//   dx[n, c, z, y, x] = alpha * sum_{m, a, b, e} w[c*M + m, 0, a', b', e']
//                         * dy[n, c*M + m, (z + pd - a dd) / sd, (y + ph - b dh) / sh,
//                              (x + pw - e dw) / sw]
//                       + beta * dx[n, c, z, y, x]
//
// over the taps whose dy index is whole and inside dy; the tap (a', b', e') is (a, b, e)
// in cross-correlation mode and flipped in convolution mode. Accumulation in f32 (f64
// for f64 data, with its scalars in f64); dx is read only when beta != 0. Entry points,
// per filter extent <KD><KH><KW> and type (f64: the NCHW ones but s1x8, see
// ENTRIES_HALF_AND_F32):
// dw_dgrad_k<KD><KH><KW>_s1_<f32|f16|bf16> (every stride 1, any dilation: 133, 155, 177,
// 333; four outputs a thread), dw_dgrad_k1<K><K>_s1x8_<f32|f16|bf16> (the same for 133,
// 155 and 177, eight outputs a thread), dw_dgrad_kw<KW>_s1_<f32|f16|bf16> (2-d or 3-d,
// every stride 1, any dilation, the filter's height KH and depth KD taken at run time, KW
// odd from 1 to 31), dw_dgrad_k<KD><KH><KW>_s2_<f32|f16|bf16> (height and width
// stride 2 and dilation 1: 133, 155 and 177 2-d only, and 333 with depth stride 1 or 2)
// and dw_dgrad_k333_strided_<f32|f16|bf16> (3-d, the other strides, width dilation 1) and
// dw_dgrad_kw<KW>_strided_<f32|f16|bf16> (2-d or 3-d, the other strides, width dilation
// 1, the filter's height and depth taken at run time, KW from 1 to 11). Channels last
// (NHWC dy and dx; the filter's bytes are the same in either layout):
// dw_dgrad_nhwc_k1<K><K>_s1_<type> and dw_dgrad_nhwc_k1<K><K>_s1v4_<type> (2-d 3x3, 5x5
// and 7x7, every stride 1, any dilation; four outputs a thread, of one channel or of four
// loaded together).
//
// scripts/gen_ptx.py compiles each entry point of this with NVRTC on its own into the
// packs of PTX and cubins committed beside it, which src/bwd_data/kernel.rs loads through
// the driver, an entry point at a time: building the crate needs no CUDA toolkit. No
// headers: the half conversions are PTX instructions, bfloat16's bit operations.

// Mirrored by `Params` in src/bwd_data/direct.rs.
struct Params {
    unsigned n, c, m;        // batch, dx channels, channel multiplier (dy channels c*m)
    unsigned d, h, w;        // dx spatial extent
    unsigned od, oh, ow;     // dy spatial extent
    int pd, ph, pw;          // padding
    int dd, dh, dw;          // dilation
    int sd, sh, sw;          // stride (the strided entry points)
    int flip;                // 1 in convolution mode
    unsigned items;          // work items: n c d h ceil(w / (TX step)) step, step = dw (stride 1)
                             // or sw (strided); channels last: n h ceil(w / (TX dw)) dw
    unsigned kh;             // filter height (read by the entry points that take it at run time)
    unsigned group;          // channels a block takes (the channels-last entry points)
    unsigned kd;             // filter depth (read by the entry points that take the height)
    double alpha, beta;      // the call's scalars (rounded to f32 by the f32-computing types)
};

// The type a value of T is computed in: f32, f64 for f64 data.
template <typename T> struct Acc { typedef float type; };
template <> struct Acc<double> { typedef double type; };

// The call's scalars in the type of the computation.
template <typename A>
__device__ __forceinline__ void scalars(const Params& p, A& a, A& b) {
    a = static_cast<A>(p.alpha);
    b = static_cast<A>(p.beta);
}

// `load` reads through the read-only cache (w and dy); `reload` is a plain read (dx).
__device__ __forceinline__ float load(const float* p) { return __ldg(p); }
__device__ __forceinline__ float reload(const float* p) { return *p; }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ double load(const double* p) { return __ldg(p); }
__device__ __forceinline__ double reload(const double* p) { return *p; }
__device__ __forceinline__ void store(double* p, double v) { *p = v; }

struct Half { unsigned short bits; };
struct BFloat { unsigned short bits; };

// A 16-bit value's bits as f32 (`p` only picks the type).
__device__ __forceinline__ float widen(unsigned short b, const Half*) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b));
    return f;
}
__device__ __forceinline__ float widen(unsigned short b, const BFloat*) {
    return __uint_as_float(static_cast<unsigned>(b) << 16);
}
template <typename T>
__device__ __forceinline__ float load(const T* p) {
    return widen(__ldg(reinterpret_cast<const unsigned short*>(p)), p);
}
template <typename T>
__device__ __forceinline__ float reload(const T* p) {
    return widen(p->bits, p);
}
__device__ __forceinline__ void store(Half* p, float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    p->bits = h;
}
__device__ __forceinline__ void store(BFloat* p, float v) {
    unsigned u = __float_as_uint(v);
    unsigned short b;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        b = static_cast<unsigned short>((u >> 16) | 0x40u);  // NaN stays NaN
    } else {
        b = static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    p->bits = b;
}

// The threads' work: each work item computes TX outputs of one dx row, `step` columns
// apart (the width dilation at stride 1, the width stride when strided). A row of W
// outputs is cut into ceil(W / (TX step)) spans of TX step columns, each spread over
// `step` threads (thread r of a span starts at column r): per row, `per_row` items.
template <int TX>
__device__ __forceinline__ unsigned items_per_row(const Params& p, int step) {
    return (p.w + TX * step - 1) / (TX * step) * static_cast<unsigned>(step);
}

// Work item i: its row (n, c, z, y), the row's index and its first column x0.
struct Item {
    unsigned row, n, c;
    int z, y, x0;
};

template <int TX>
__device__ __forceinline__ Item item_of(const Params& p, unsigned i, unsigned per_row,
                                        int step) {
    Item it;
    const unsigned g = i % per_row;
    it.row = i / per_row;
    unsigned t = it.row;
    it.y = static_cast<int>(t % p.h);
    t /= p.h;
    it.z = static_cast<int>(t % p.d);
    t /= p.d;
    it.c = t % p.c;
    it.n = t / p.c;
    it.x0 = static_cast<int>(g / step) * TX * step + static_cast<int>(g % step);
    return it;
}

// Writes a work item's outputs: alpha acc, plus beta dx where beta != 0.
template <typename T, int TX>
__device__ __forceinline__ void store_item(const Params& p, T* __restrict__ dx,
                                           const Item& it, int step,
                                           const typename Acc<T>::type (&acc)[TX]) {
    typedef typename Acc<T>::type A;
    A alpha, beta;
    scalars(p, alpha, beta);
    const unsigned base = it.row * p.w;
#pragma unroll
    for (int j = 0; j < TX; ++j) {
        const int x = it.x0 + j * step;
        if (x < static_cast<int>(p.w)) {
            A r = alpha * acc[j];
            if (beta != A(0)) r += beta * reload(dx + base + x);
            store(dx + base + x, r);
        }
    }
}

// Stride 1, any dilation: each work item computes TX outputs of a row, at
// x0, x0 + dw, ..., x0 + (TX-1) dw (dw: the width dilation). Output j meets tap e at
// dy column x0 + pw + (j - e) dw, so the TX outputs of a filter row read TX + KW - 1
// dy values and KW weights, held in registers, instead of TX * KW of each. KH = 0: the
// filter's height is p.kh and its depth p.kd (KD unused; the filter rows and planes are
// loops; the window needs KW fixed).
template <typename T, int KD, int KH, int KW, int TX>
__device__ __forceinline__ void dgrad_s1_rows(const Params& p, const T* __restrict__ w,
                                              const T* __restrict__ dy, T* __restrict__ dx) {
    const int kh = KH > 0 ? KH : static_cast<int>(p.kh);
    const int kd = KH > 0 ? KD : static_cast<int>(p.kd);
    const int taps = kd * kh * KW;
    constexpr int WIN = TX + KW - 1;
    const int dw = p.dw;
    const unsigned per_row = items_per_row<TX>(p, dw);
    const unsigned volume = p.od * (p.oh * p.ow);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < p.items;
         i += blockDim.x * gridDim.x) {
        const Item it = item_of<TX>(p, i, per_row, dw);
        const int z = it.z, y = it.y, x0 = it.x0;
        const unsigned c = it.c, n = it.n;
        typedef typename Acc<T>::type A;
        A acc[TX];
#pragma unroll
        for (int j = 0; j < TX; ++j) acc[j] = A(0);
        for (unsigned m = 0; m < p.m; ++m) {
            const unsigned k = c * p.m + m;
            const T* wk = w + k * taps;
            const T* dyk = dy + (n * p.c * p.m + k) * volume;
#pragma unroll
            for (int a = 0; a < kd; ++a) {
                const int od = z + p.pd - a * p.dd;
                if (od < 0 || od >= static_cast<int>(p.od)) continue;
#pragma unroll
                for (int b = 0; b < kh; ++b) {
                    const int oh = y + p.ph - b * p.dh;
                    if (oh < 0 || oh >= static_cast<int>(p.oh)) continue;
                    const T* row = dyk + (static_cast<unsigned>(od) * p.oh + oh) * p.ow;
                    A v[WIN];
#pragma unroll
                    for (int q = 0; q < WIN; ++q) {
                        const int ow = x0 + p.pw + (q - (KW - 1)) * dw;
                        v[q] = (ow >= 0 && ow < static_cast<int>(p.ow)) ? load(row + ow) : A(0);
                    }
#pragma unroll
                    for (int e = 0; e < KW; ++e) {
                        const int tap = (a * kh + b) * KW + e;
                        const A f = load(wk + (p.flip ? taps - 1 - tap : tap));
#pragma unroll
                        for (int j = 0; j < TX; ++j) acc[j] += f * v[j - e + KW - 1];
                    }
                }
            }
        }
        store_item<T, TX>(p, dx, it, dw, acc);
    }
}

// Any stride, width dilation 1: each work item computes TX outputs of a row, at x0,
// x0 + sw, ..., x0 + (TX-1) sw. Output j meets tap e at dy column (x0 + pw - e) / sw + j
// when sw divides x0 + pw - e, the same for every j: a tap that meets one of the outputs
// meets all TX, at TX consecutive dy values, and its weight is read once for them.
// KH = 0: the filter's height is p.kh and its depth p.kd (KD unused).
template <typename T, int KD, int KH, int KW, int TX>
__device__ __forceinline__ void dgrad_strided_rows(const Params& p, const T* __restrict__ w,
                                                   const T* __restrict__ dy,
                                                   T* __restrict__ dx) {
    const int kh = KH > 0 ? KH : static_cast<int>(p.kh);
    const int kd = KH > 0 ? KD : static_cast<int>(p.kd);
    const int taps = kd * kh * KW;
    const int sw = p.sw;
    const unsigned per_row = items_per_row<TX>(p, sw);
    const unsigned volume = p.od * (p.oh * p.ow);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < p.items;
         i += blockDim.x * gridDim.x) {
        const Item it = item_of<TX>(p, i, per_row, sw);
        const int z = it.z, y = it.y, x0 = it.x0;
        const unsigned c = it.c, n = it.n;
        typedef typename Acc<T>::type A;
        A acc[TX];
#pragma unroll
        for (int j = 0; j < TX; ++j) acc[j] = A(0);
        for (unsigned m = 0; m < p.m; ++m) {
            const unsigned k = c * p.m + m;
            const T* wk = w + k * taps;
            const T* dyk = dy + (n * p.c * p.m + k) * volume;
#pragma unroll
            for (int a = 0; a < kd; ++a) {
                const int zd = z + p.pd - a * p.dd;
                if (zd < 0 || zd % p.sd != 0) continue;
                const int od = zd / p.sd;
                if (od >= static_cast<int>(p.od)) continue;
#pragma unroll
                for (int b = 0; b < kh; ++b) {
                    const int yh = y + p.ph - b * p.dh;
                    if (yh < 0 || yh % p.sh != 0) continue;
                    const int oh = yh / p.sh;
                    if (oh >= static_cast<int>(p.oh)) continue;
                    const T* row = dyk + (static_cast<unsigned>(od) * p.oh + oh) * p.ow;
#pragma unroll
                    for (int e = 0; e < KW; ++e) {
                        const int xw = x0 + p.pw - e;
                        if (xw % sw != 0) continue;  // exact for negative xw too
                        const int o = xw / sw;
                        const int tap = (a * kh + b) * KW + e;
                        const A f = load(wk + (p.flip ? taps - 1 - tap : tap));
#pragma unroll
                        for (int j = 0; j < TX; ++j) {
                            const int ow = o + j;
                            if (ow >= 0 && ow < static_cast<int>(p.ow)) acc[j] += f * load(row + ow);
                        }
                    }
                }
            }
        }
        store_item<T, TX>(p, dx, it, sw, acc);
    }
}

// Stride 2 in height and width, dilation 1 there (in 3-d: depth stride 1 or 2, any depth
// dilation): each work item computes TX = 4 consecutive outputs of a row, x0 = 4g, ...,
// x0 + 3. Output x meets tap (b, e) at dy row (y + ph - b) / 2 and column
// (x + pw - e) / 2 when both are whole. x0 being even, which taps meet output x0 + j
// depends only on j and the parity PAR of pw: fixed in the code, as is the dy column,
// base + (j + PAR - e) / 2 with base = (x0 + pw - PAR) / 2. The four outputs of a filter
// row read s2_bound's span of dy values (3 for a 3x3 filter, 5 for 7x7) and the row's
// weights once. No division in the loops: parities and shifts.
template <int KW, int PAR, bool HI>
__device__ constexpr int s2_bound() {
    int b = HI ? -1000 : 1000;
    for (int j = 0; j < 4; ++j) {
        for (int e = 0; e < KW; ++e) {
            if (((j + PAR - e) & 1) == 0) {
                const int q = (j + PAR - e) / 2;
                b = HI ? (q > b ? q : b) : (q < b ? q : b);
            }
        }
    }
    return b;
}

template <typename T, int KD, int K, int PAR>
__device__ __forceinline__ void dgrad_s2_item(const Params& p, const T* __restrict__ w,
                                              const T* __restrict__ dy, const Item& it,
                                              typename Acc<T>::type (&acc)[4]) {
    typedef typename Acc<T>::type A;
    constexpr int TAPS = KD * K * K;
    constexpr int LO = s2_bound<K, PAR, false>();
    constexpr int WIN = s2_bound<K, PAR, true>() - LO + 1;
    const unsigned volume = p.od * (p.oh * p.ow);
    const int base = (it.x0 + p.pw - PAR) >> 1;
    for (unsigned m = 0; m < p.m; ++m) {
        const unsigned k = it.c * p.m + m;
        const T* wk = w + k * TAPS;
        const T* dyk = dy + (it.n * p.c * p.m + k) * volume;
#pragma unroll
        for (int a = 0; a < KD; ++a) {
        int od = 0;
        if (KD > 1) {  // depth stride sd: 1 or 2
            const int zd = it.z + p.pd - a * p.dd;
            od = p.sd == 1 ? zd : zd >> 1;
            if (zd < 0 || (p.sd != 1 && (zd & 1)) || od >= static_cast<int>(p.od)) continue;
        }
#pragma unroll
        for (int b = 0; b < K; ++b) {
            const int yh = it.y + p.ph - b;
            const int oh = yh >> 1;  // arithmetic: -1 for -2 (and ruled out below)
            if ((yh & 1) || oh < 0 || oh >= static_cast<int>(p.oh)) continue;
            const T* row = dyk + (static_cast<unsigned>(od) * p.oh + oh) * p.ow;
            A v[WIN];
#pragma unroll
            for (int q = 0; q < WIN; ++q) {
                const int ow = base + LO + q;
                v[q] = (ow >= 0 && ow < static_cast<int>(p.ow)) ? load(row + ow) : A(0);
            }
#pragma unroll
            for (int e = 0; e < K; ++e) {
                const int tap = (a * K + b) * K + e;
                const A f = load(wk + (p.flip ? TAPS - 1 - tap : tap));
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (((j + PAR - e) & 1) == 0) acc[j] += f * v[(j + PAR - e) / 2 - LO];
                }
            }
        }
        }
    }
}

template <typename T, int KD, int K>
__device__ __forceinline__ void dgrad_s2_rows(const Params& p, const T* __restrict__ w,
                                              const T* __restrict__ dy, T* __restrict__ dx) {
    const unsigned per_row = items_per_row<4>(p, 1);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < p.items;
         i += blockDim.x * gridDim.x) {
        const Item it = item_of<4>(p, i, per_row, 1);
        typedef typename Acc<T>::type A;
        A acc[4] = {A(0), A(0), A(0), A(0)};
        if (p.pw & 1) {
            dgrad_s2_item<T, KD, K, 1>(p, w, dy, it, acc);
        } else {
            dgrad_s2_item<T, KD, K, 0>(p, w, dy, it, acc);
        }
        store_item<T, 4>(p, dx, it, 1, acc);
    }
}

// Channels last: VEC consecutive channels as one load or store (VEC = 1, 2 or 4), in f32
// registers. `vload` reads through the read-only cache when `cached` (dy), else plainly
// (dx, and the weights in shared memory).
template <typename T>
__device__ __forceinline__ unsigned short narrow(float v) {
    T t;
    store(&t, v);
    return t.bits;
}

template <int VEC>
__device__ __forceinline__ void vload(const float* p, float (&v)[VEC], bool cached) {
    if (VEC == 4) {
        const float4 q = cached ? __ldg(reinterpret_cast<const float4*>(p))
                                : *reinterpret_cast<const float4*>(p);
        v[0] = q.x; v[1 % VEC] = q.y; v[2 % VEC] = q.z; v[3 % VEC] = q.w;
    } else if (VEC == 2) {
        const float2 q = cached ? __ldg(reinterpret_cast<const float2*>(p))
                                : *reinterpret_cast<const float2*>(p);
        v[0] = q.x; v[1 % VEC] = q.y;
    } else {
        v[0] = cached ? __ldg(p) : *p;
    }
}
template <typename T, int VEC>
__device__ __forceinline__ void vload(const T* p, float (&v)[VEC], bool cached) {
    const unsigned short* b = reinterpret_cast<const unsigned short*>(p);
    if (VEC == 4) {
        const uint2 q = cached ? __ldg(reinterpret_cast<const uint2*>(b))
                               : *reinterpret_cast<const uint2*>(b);
        v[0] = widen(static_cast<unsigned short>(q.x & 0xffffu), p);
        v[1 % VEC] = widen(static_cast<unsigned short>(q.x >> 16), p);
        v[2 % VEC] = widen(static_cast<unsigned short>(q.y & 0xffffu), p);
        v[3 % VEC] = widen(static_cast<unsigned short>(q.y >> 16), p);
    } else if (VEC == 2) {
        const unsigned q = cached ? __ldg(reinterpret_cast<const unsigned*>(b))
                                  : *reinterpret_cast<const unsigned*>(b);
        v[0] = widen(static_cast<unsigned short>(q & 0xffffu), p);
        v[1 % VEC] = widen(static_cast<unsigned short>(q >> 16), p);
    } else {
        v[0] = widen(cached ? __ldg(b) : *b, p);
    }
}
template <int VEC>
__device__ __forceinline__ void vstore(float* p, const float (&v)[VEC]) {
    if (VEC == 4) {
        *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1 % VEC], v[2 % VEC], v[3 % VEC]);
    } else if (VEC == 2) {
        *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1 % VEC]);
    } else {
        *p = v[0];
    }
}
template <typename T, int VEC>
__device__ __forceinline__ void vstore(T* p, const float (&v)[VEC]) {
    unsigned short* b = reinterpret_cast<unsigned short*>(p);
    if (VEC == 4) {
        uint2 q;
        q.x = narrow<T>(v[0]) | (static_cast<unsigned>(narrow<T>(v[1 % VEC])) << 16);
        q.y = narrow<T>(v[2 % VEC]) | (static_cast<unsigned>(narrow<T>(v[3 % VEC])) << 16);
        *reinterpret_cast<uint2*>(b) = q;
    } else if (VEC == 2) {
        *reinterpret_cast<unsigned*>(b) =
            narrow<T>(v[0]) | (static_cast<unsigned>(narrow<T>(v[1 % VEC])) << 16);
    } else {
        *b = narrow<T>(v[0]);
    }
}

// Channels-last (NHWC, 2-d) operands, stride 1, any dilation, a square filter KxK with
// its height and width fixed. Each thread computes TX outputs of a dx row (x0, x0 + dw,
// ...) for VEC consecutive channels, loading and storing VEC channels at a time, and the
// threads next to it take the next channels, so that a warp's loads and stores are of
// adjacent bytes. A block takes p.group channels (VEC divides it; with M filters a channel
// group * M is at most NHWC_SLOTS) and p.group / VEC threads a work item, for as many
// work items as fit in it; it stages its channels' weights in shared memory once,
// tap-major, flipped there in convolution mode, then takes chunks of work items
// gridDim.x / groups apart. Work items count spans of rows as in NCHW (p.items:
// n h ceil(W / (TX dw)) dw). VEC > 1 needs M = 1 and dy and dx aligned to VEC values.
constexpr int NHWC_SLOTS = 128;

template <typename T, int K, int TX, int VEC>
__device__ __forceinline__ void dgrad_nhwc_s1(const Params& p, const T* __restrict__ w,
                                              const T* __restrict__ dy, T* __restrict__ dx) {
    constexpr int TAPS = K * K;
    constexpr int WIN = TX + K - 1;
    __shared__ __align__(16) float ws[NHWC_SLOTS * TAPS];
    const unsigned group = p.group;
    const unsigned groups = p.c / group;
    const unsigned g = blockIdx.x % groups;
    // The group's filters are contiguous: w[(c M + m) TAPS + tap], c from g group; slot
    // s = (c - g group) M + m holds them at ws[tap slots + s].
    const unsigned slots = group * p.m;
    const T* wg = w + g * slots * TAPS;
    for (unsigned e = threadIdx.x; e < slots * TAPS; e += blockDim.x) {
        const unsigned sl = e / TAPS, t = e % TAPS;
        ws[(p.flip ? TAPS - 1 - t : t) * slots + sl] = load(wg + e);
    }
    __syncthreads();
    const unsigned lanes = group / VEC;
    const unsigned per_block = blockDim.x / lanes;
    const unsigned lane = threadIdx.x % lanes, sub = threadIdx.x / lanes;
    if (sub >= per_block) return;
    const unsigned c = g * group + lane * VEC;  // this thread's first channel
    const unsigned kc = p.c * p.m;             // dy's channels
    const int dw = p.dw;
    const unsigned per_row = items_per_row<TX>(p, dw);
    const unsigned chunks = (p.items + per_block - 1) / per_block;
    for (unsigned chunk = blockIdx.x / groups; chunk < chunks; chunk += gridDim.x / groups) {
        const unsigned i = chunk * per_block + sub;
        if (i >= p.items) break;
        const unsigned gi = i % per_row, row = i / per_row;
        const int y = static_cast<int>(row % p.h);
        const unsigned n = row / p.h;
        const int x0 = static_cast<int>(gi / dw) * TX * dw + static_cast<int>(gi % dw);
        float acc[TX][VEC];
#pragma unroll
        for (int j = 0; j < TX; ++j)
#pragma unroll
            for (int u = 0; u < VEC; ++u) acc[j][u] = 0.0f;
        for (unsigned m = 0; m < p.m; ++m) {
            const T* dyk = dy + n * p.oh * p.ow * kc + c * p.m + m;
            const float* wm = ws + lane * VEC * p.m + m;
#pragma unroll
            for (int b = 0; b < K; ++b) {
                const int oh = y + p.ph - b * p.dh;
                if (oh < 0 || oh >= static_cast<int>(p.oh)) continue;
                const T* r = dyk + static_cast<unsigned>(oh) * p.ow * kc;
                float v[WIN][VEC];
#pragma unroll
                for (int q = 0; q < WIN; ++q) {
                    const int ow = x0 + p.pw + (q - (K - 1)) * dw;
                    if (ow >= 0 && ow < static_cast<int>(p.ow)) {
                        vload(r + static_cast<unsigned>(ow) * kc, v[q], true);
                    } else {
#pragma unroll
                        for (int u = 0; u < VEC; ++u) v[q][u] = 0.0f;
                    }
                }
#pragma unroll
                for (int e = 0; e < K; ++e) {
                    float f[VEC];
                    if (VEC > 1) {
                        vload(wm + (b * K + e) * slots, f, false);
                    } else {
                        f[0] = wm[(b * K + e) * slots];
                    }
#pragma unroll
                    for (int j = 0; j < TX; ++j)
#pragma unroll
                        for (int u = 0; u < VEC; ++u) acc[j][u] += f[u] * v[j - e + K - 1][u];
                }
            }
        }
        float alpha, beta;
        scalars(p, alpha, beta);
        T* out = dx + (n * p.h + static_cast<unsigned>(y)) * p.w * p.c + c;
#pragma unroll
        for (int j = 0; j < TX; ++j) {
            const int x = x0 + j * dw;
            if (x < static_cast<int>(p.w)) {
                T* o = out + static_cast<unsigned>(x) * p.c;
                float r[VEC];
#pragma unroll
                for (int u = 0; u < VEC; ++u) r[u] = alpha * acc[j][u];
                if (beta != 0.0f) {
                    float old[VEC];
                    vload(o, old, false);
#pragma unroll
                    for (int u = 0; u < VEC; ++u) r[u] += beta * old[u];
                }
                vstore(o, r);
            }
        }
    }
}

// At least MINB blocks a multiprocessor: 3x3 (64 registers) 4, the others 3 (at most 80
// registers: 7x7 in half precision took 99, two blocks, and 1.2-1.6x the time on small
// layers, a second wave of a few blocks).
#define NHWC(NAME, T, K, TX, VEC, MINB)                                                 \
    extern "C" __global__ void __launch_bounds__(256, MINB)                            \
        NAME(Params p, const T* w, const T* dy, T* dx) {                               \
        dgrad_nhwc_s1<T, K, TX, VEC>(p, w, dy, dx);                                     \
    }

#define ROWS(NAME, T, KD, KH, KW)                                                      \
    extern "C" __global__ void __launch_bounds__(256)                                  \
        NAME(Params p, const T* w, const T* dy, T* dx) {                               \
        dgrad_s1_rows<T, KD, KH, KW, 4>(p, w, dy, dx);                                  \
    }

// The same, eight outputs a thread: the index arithmetic and the window's loads spread
// over twice the outputs, for problems with threads enough to fill the GPU.
#define ROWS8(NAME, T, KD, KH, KW)                                                     \
    extern "C" __global__ void __launch_bounds__(256)                                  \
        NAME(Params p, const T* w, const T* dy, T* dx) {                               \
        dgrad_s1_rows<T, KD, KH, KW, 8>(p, w, dy, dx);                                  \
    }

#define BAND(NAME, T, KW)                                                               \
    extern "C" __global__ void __launch_bounds__(256)                                  \
        NAME(Params p, const T* w, const T* dy, T* dx) {                               \
        dgrad_s1_rows<T, 1, 0, KW, 4>(p, w, dy, dx);                                    \
    }

#define S2(NAME, T, KD, K)                                                              \
    extern "C" __global__ void __launch_bounds__(256)                                  \
        NAME(Params p, const T* w, const T* dy, T* dx) {                               \
        dgrad_s2_rows<T, KD, K>(p, w, dy, dx);                                          \
    }

#define STRIDED(NAME, T, KD, KH, KW)                                                   \
    extern "C" __global__ void __launch_bounds__(256)                                  \
        NAME(Params p, const T* w, const T* dy, T* dx) {                               \
        dgrad_strided_rows<T, KD, KH, KW, 4>(p, w, dy, dx);                             \
    }

#define STRIDED_BAND(NAME, T, KW)                                                       \
    extern "C" __global__ void __launch_bounds__(256)                                  \
        NAME(Params p, const T* w, const T* dy, T* dx) {                               \
        dgrad_strided_rows<T, 1, 0, KW, 4>(p, w, dy, dx);                               \
    }

// The entry points of every type (scripts/gen_ptx.py compiles each line of an
// entry-point macro's body once per expansion of it below) ...
#define ENTRIES(SUFFIX, T)                                                          \
    ROWS(dw_dgrad_k133_s1_##SUFFIX, T, 1, 3, 3)                                     \
    ROWS(dw_dgrad_k155_s1_##SUFFIX, T, 1, 5, 5)                                     \
    ROWS(dw_dgrad_k177_s1_##SUFFIX, T, 1, 7, 7)                                     \
    ROWS(dw_dgrad_k333_s1_##SUFFIX, T, 3, 3, 3)                                     \
    STRIDED(dw_dgrad_k333_strided_##SUFFIX, T, 3, 3, 3)                             \
    S2(dw_dgrad_k133_s2_##SUFFIX, T, 1, 3)                                          \
    S2(dw_dgrad_k155_s2_##SUFFIX, T, 1, 5)                                          \
    S2(dw_dgrad_k177_s2_##SUFFIX, T, 1, 7)                                          \
    S2(dw_dgrad_k333_s2_##SUFFIX, T, 3, 3)                                          \
    BAND(dw_dgrad_kw1_s1_##SUFFIX, T, 1)                                            \
    BAND(dw_dgrad_kw3_s1_##SUFFIX, T, 3)                                            \
    BAND(dw_dgrad_kw5_s1_##SUFFIX, T, 5)                                            \
    BAND(dw_dgrad_kw7_s1_##SUFFIX, T, 7)                                            \
    BAND(dw_dgrad_kw9_s1_##SUFFIX, T, 9)                                            \
    BAND(dw_dgrad_kw11_s1_##SUFFIX, T, 11)                                          \
    BAND(dw_dgrad_kw13_s1_##SUFFIX, T, 13)                                          \
    BAND(dw_dgrad_kw15_s1_##SUFFIX, T, 15)                                          \
    BAND(dw_dgrad_kw17_s1_##SUFFIX, T, 17)                                          \
    BAND(dw_dgrad_kw19_s1_##SUFFIX, T, 19)                                          \
    BAND(dw_dgrad_kw21_s1_##SUFFIX, T, 21)                                          \
    BAND(dw_dgrad_kw23_s1_##SUFFIX, T, 23)                                          \
    BAND(dw_dgrad_kw25_s1_##SUFFIX, T, 25)                                          \
    BAND(dw_dgrad_kw27_s1_##SUFFIX, T, 27)                                          \
    BAND(dw_dgrad_kw29_s1_##SUFFIX, T, 29)                                          \
    BAND(dw_dgrad_kw31_s1_##SUFFIX, T, 31)                                          \
    STRIDED_BAND(dw_dgrad_kw1_strided_##SUFFIX, T, 1)                               \
    STRIDED_BAND(dw_dgrad_kw2_strided_##SUFFIX, T, 2)                               \
    STRIDED_BAND(dw_dgrad_kw3_strided_##SUFFIX, T, 3)                               \
    STRIDED_BAND(dw_dgrad_kw4_strided_##SUFFIX, T, 4)                               \
    STRIDED_BAND(dw_dgrad_kw5_strided_##SUFFIX, T, 5)                               \
    STRIDED_BAND(dw_dgrad_kw6_strided_##SUFFIX, T, 6)                               \
    STRIDED_BAND(dw_dgrad_kw7_strided_##SUFFIX, T, 7)                               \
    STRIDED_BAND(dw_dgrad_kw8_strided_##SUFFIX, T, 8)                               \
    STRIDED_BAND(dw_dgrad_kw9_strided_##SUFFIX, T, 9)                               \
    STRIDED_BAND(dw_dgrad_kw10_strided_##SUFFIX, T, 10)                             \
    STRIDED_BAND(dw_dgrad_kw11_strided_##SUFFIX, T, 11)

// ... and those f64 lacks: the eight-output s1x8 ones (eight f64 outputs a thread would
// double the registers) and the channels-last ones (channels-last f64 problems run on
// NCHW copies).
#define ENTRIES_HALF_AND_F32(SUFFIX, T)                                             \
    ROWS8(dw_dgrad_k133_s1x8_##SUFFIX, T, 1, 3, 3)                                  \
    ROWS8(dw_dgrad_k155_s1x8_##SUFFIX, T, 1, 5, 5)                                  \
    ROWS8(dw_dgrad_k177_s1x8_##SUFFIX, T, 1, 7, 7)                                  \
    NHWC(dw_dgrad_nhwc_k133_s1_##SUFFIX, T, 3, 4, 1, 4)                             \
    NHWC(dw_dgrad_nhwc_k155_s1_##SUFFIX, T, 5, 4, 1, 3)                             \
    NHWC(dw_dgrad_nhwc_k177_s1_##SUFFIX, T, 7, 4, 1, 3)                             \
    NHWC(dw_dgrad_nhwc_k133_s1v4_##SUFFIX, T, 3, 4, 4, 4)                           \
    NHWC(dw_dgrad_nhwc_k155_s1v4_##SUFFIX, T, 5, 4, 4, 3)                           \
    NHWC(dw_dgrad_nhwc_k177_s1v4_##SUFFIX, T, 7, 4, 4, 3)

ENTRIES(f32, float)
ENTRIES(f16, Half)
ENTRIES(bf16, BFloat)
ENTRIES(f64, double)
ENTRIES_HALF_AND_F32(f32, float)
ENTRIES_HALF_AND_F32(f16, Half)
ENTRIES_HALF_AND_F32(bf16, BFloat)
