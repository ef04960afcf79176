// Kernels and cuBLAS calls behind tinytensor.cuda_ops (C ABI: c_api.h).
//
// Host code here uses only libc, pthreads, libcudart and libcublas (no libstdc++), so the object
// links into a binding built by another C++ toolchain. Builds with CUDA 12 and CUDA 13 alike.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api.h"

// A named namespace, not an anonymous one: nvcc names an anonymous namespace after the source
// file's absolute path, which would make each build's binary differ by where it was built. The
// linker's version script keeps everything here out of the extension's exports all the same.
namespace tt_gpu {

__thread char g_error[512];

const char *cuda_error(cudaError_t err, const char *where) {
  if (err == cudaSuccess) return nullptr;
  snprintf(g_error, sizeof g_error, "%s (%d) in %s: %s", cudaGetErrorName(err), (int)err, where,
           cudaGetErrorString(err));
  return g_error;
}

const char *cublas_error(cublasStatus_t status, const char *where) {
  if (status == CUBLAS_STATUS_SUCCESS) return nullptr;
  snprintf(g_error, sizeof g_error, "%s (%d) in %s: %s", cublasGetStatusName(status), (int)status,
           where, cublasGetStatusString(status));
  return g_error;
}

const char *launch_error(const char *where) { return cuda_error(cudaGetLastError(), where); }

// ------------------------------------------------------------------ cuBLAS handles and workspaces
// One handle per device, created on first use and kept for the process's life. Deliberately never
// destroyed: at exit the CUDA runtime may already have torn down the device's primary context
// (interpreter shutdown order is not ours to choose), and cublasDestroy would then touch freed
// state; the driver reclaims everything when the process ends. PyTorch leaks its handles for the
// same reason.
//
// A handle's default workspace is one buffer: two GEMMs queued on different streams would share it
// while running concurrently. So each (device, stream) gets its own workspace, set before every
// call (cublasSetStream resets it). Workspaces are never freed either: a stream's address can be
// reused after the stream is destroyed, and the new stream then inherits the buffer, which is safe
// once the old stream's GEMMs have finished (a stream destroyed with one still queued and replaced
// at once by a busy new one could share it; CuPy frees streams only when they are unreachable).
constexpr int kMaxDevices = 64;
cublasHandle_t g_handles[kMaxDevices];
pthread_mutex_t g_handles_lock = PTHREAD_MUTEX_INITIALIZER;

struct Workspace {
  int device;
  void *stream;
  void *ptr;
  size_t bytes;
};
Workspace *g_workspaces = nullptr;
int g_workspace_count = 0, g_workspace_capacity = 0;

const char *handle_for_current_device(cublasHandle_t *out, int *device) {
  if (const char *e = cuda_error(cudaGetDevice(device), "cudaGetDevice")) return e;
  if (*device < 0 || *device >= kMaxDevices) {
    snprintf(g_error, sizeof g_error, "device %d is beyond the %d devices supported", *device, kMaxDevices);
    return g_error;
  }
  if (!g_handles[*device]) {
    if (const char *e = cublas_error(cublasCreate(&g_handles[*device]), "cublasCreate")) return e;
  }
  *out = g_handles[*device];
  return nullptr;
}

// The workspace for (device, stream), allocated on first use: 32 MiB from Hopper on, 4 MiB before
// (the sizes cuBLAS itself picks for its default workspace).
const char *workspace_for(int device, void *stream, Workspace *out) {
  for (int i = 0; i < g_workspace_count; ++i) {
    if (g_workspaces[i].device == device && g_workspaces[i].stream == stream) {
      *out = g_workspaces[i];
      return nullptr;
    }
  }
  int major = 0;
  if (const char *e = cuda_error(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                                 "cudaDeviceGetAttribute"))
    return e;
  Workspace w = {device, stream, nullptr, (size_t)(major >= 9 ? 32 : 4) << 20};
  if (const char *e = cuda_error(cudaMalloc(&w.ptr, w.bytes), "cudaMalloc (cuBLAS workspace)")) return e;
  if (g_workspace_count == g_workspace_capacity) {
    int capacity = g_workspace_capacity ? 2 * g_workspace_capacity : 8;
    void *grown = realloc(g_workspaces, capacity * sizeof(Workspace));
    if (!grown) {
      cudaFree(w.ptr);
      snprintf(g_error, sizeof g_error, "out of host memory for the cuBLAS workspace table");
      return g_error;
    }
    g_workspaces = (Workspace *)grown;
    g_workspace_capacity = capacity;
  }
  g_workspaces[g_workspace_count++] = w;
  *out = w;
  return nullptr;
}

// ------------------------------------------------------------------ device helpers
constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return (int)(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

// The activations the bias + activation kernels implement; a code is its index here. The Python
// side asks (supports_activation) and runs any other activation through CuPy.
enum tt_activation { TT_ACT_NONE = 0, TT_ACT_RELU = 1, TT_ACT_GELU = 2 };
const char *const kActivationNames[] = {"none", "relu", "gelu"};
constexpr int kActivationCount = sizeof(kActivationNames) / sizeof(kActivationNames[0]);

template <typename T> __device__ T gelu_tanh(T x) {
  const T c = (T)0.7978845608028654, k = (T)0.044715;
  return (T)0.5 * x * ((T)1 + tanh(c * (x + k * x * x * x)));
}

template <typename T> __device__ T gelu_tanh_grad(T x) {
  const T c = (T)0.7978845608028654, k = (T)0.044715;
  T x2 = x * x;
  T t = tanh(c * (x + k * x2 * x));
  return (T)0.5 * ((T)1 + t) + (T)0.5 * x * ((T)1 - t * t) * c * ((T)1 + (T)3 * k * x2);
}

template <typename T> __device__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T> __device__ T warp_max(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmax(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

// Reduce over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
template <typename T, bool IsMax> __device__ T block_reduce(T v, T *shared) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = IsMax ? warp_max(v) : warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  int warps = blockDim.x / 32;
  v = threadIdx.x < warps ? shared[threadIdx.x] : (IsMax ? (T)-INFINITY : (T)0);
  if (warp == 0) v = IsMax ? warp_max(v) : warp_sum(v);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

// ------------------------------------------------------------------ kernels
template <typename T>
__global__ void bias_act_forward_kernel(int act, T *pre, const T *bias, T *out, int64_t rows, int64_t cols) {
  int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    T v = pre[i];
    if (bias) v += bias[i % cols];
    pre[i] = v;
    if (act == TT_ACT_RELU) v = v > (T)0 ? v : (T)0;
    else if (act == TT_ACT_GELU) v = gelu_tanh(v);
    out[i] = v;
  }
}

template <typename T>
__global__ void act_backward_kernel(int act, const T *g, const T *pre, const T *out, T *gpre, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    T d = g[i];
    if (act == TT_ACT_RELU) d = out[i] > (T)0 ? d : (T)0;
    else if (act == TT_ACT_GELU) d *= gelu_tanh_grad(pre[i]);
    gpre[i] = d;
  }
}

// Column sums: a block owns 32 columns; its 8 rows of threads stride down the rows, then reduce.
template <typename T> __global__ void column_sum_kernel(const T *x, T *out, int64_t rows, int64_t cols) {
  __shared__ T partial[8][33];
  int64_t col = blockIdx.x * 32 + threadIdx.x;
  T acc = 0;
  if (col < cols)
    for (int64_t r = threadIdx.y; r < rows; r += 8) acc += x[r * cols + col];
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    T total = 0;
    for (int k = 0; k < 8; ++k) total += partial[k][threadIdx.x];
    out[col] = total;
  }
}

template <typename T>
__global__ void softmax_xent_forward_kernel(const T *logits, const int64_t *labels, T *loss, T *probs, int64_t c) {
  __shared__ T shared[32];
  int64_t row = blockIdx.x;
  const T *x = logits + row * c;
  T m = (T)-INFINITY;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) m = fmax(m, x[j]);
  m = block_reduce<T, true>(m, shared);
  if (!isfinite(m)) m = 0;  // rows of -inf stay NaN-free until the log
  T s = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) s += exp(x[j] - m);
  s = block_reduce<T, false>(s, shared);
  T lse = log(s) + m;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) probs[row * c + j] = exp(x[j] - lse);
  if (threadIdx.x == 0) {
    int64_t label = labels[row];
    loss[row] = (label >= 0 && label < c) ? lse - x[label] : (T)NAN;
  }
}

template <typename T>
__global__ void softmax_xent_backward_kernel(const T *probs, const int64_t *labels, const T *scale, T *out,
                                             int64_t n, int64_t c) {
  int64_t total = n * c;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t row = i / c, col = i % c;
    T hot = labels[row] == col ? (T)1 : (T)0;
    out[i] = (probs[i] - hot) * scale[row];
  }
}

// ------------------------------------------------------------------ sliding windows and channel statistics
// Convolution (im2col / col2im), pooling and batch-norm statistics on (N, C, H, W) planes, all
// C-contiguous. One thread per output element, grid-stride, 64-bit indices throughout. The
// backward passes gather (each input position sums what reads it, in a fixed order: deterministic,
// no atomics) except max pooling's, whose caller has only the argmax (see max_pool2d_backward).

// The window placement reading output position (oh, ow) through kernel tap (ki, kj): input row
// oh * sh - ph + ki * dh, column ow * sw - pw + kj * dw; anything outside the input is padding.
template <typename T>
__global__ void im2col_kernel(const T *x, T *cols, int64_t planes, int64_t h, int64_t w, tt_window win, T fill) {
  int64_t total = planes * win.kh * win.kw * win.oh * win.ow;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t ow = i % win.ow, r = i / win.ow;
    int64_t oh = r % win.oh;
    r /= win.oh;
    int64_t kj = r % win.kw;
    r /= win.kw;
    int64_t ki = r % win.kh, plane = r / win.kh;
    int64_t y = oh * win.sh - win.ph + ki * win.dh, xc = ow * win.sw - win.pw + kj * win.dw;
    cols[i] = (y >= 0 && y < h && xc >= 0 && xc < w) ? x[(plane * h + y) * w + xc] : fill;
  }
}

// Gather form of im2col's adjoint: input (y, x) is read through tap ki by the output row oh with
// oh * sh == y + ph - ki * dh, when that is a multiple of sh inside [0, oh); the same for columns.
// The sum runs over (ki, kj) in order, as the reference's loop does.
template <typename T>
__global__ void col2im_kernel(const T *cols, T *x, int64_t planes, int64_t h, int64_t w, tt_window win) {
  int64_t total = planes * h * w, taps = win.kh * win.kw * win.oh * win.ow;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t xc = i % w, r = i / w;
    int64_t y = r % h, plane = r / h;
    const T *src = cols + plane * taps;
    T acc = 0;
    for (int64_t ki = 0; ki < win.kh; ++ki) {
      int64_t top = y + win.ph - ki * win.dh;
      if (top < 0) break;  // and for every later tap
      if (top % win.sh || top / win.sh >= win.oh) continue;
      int64_t oh = top / win.sh;
      for (int64_t kj = 0; kj < win.kw; ++kj) {
        int64_t left = xc + win.pw - kj * win.dw;
        if (left < 0) break;
        if (left % win.sw || left / win.sw >= win.ow) continue;
        acc += src[((ki * win.kw + kj) * win.oh + oh) * win.ow + left / win.sw];
      }
    }
    x[i] = acc;
  }
}

// PyTorch's rule: padding never wins (it is skipped, as -inf), a NaN always does (so the last NaN
// is the argmax), ties keep the first position; argmax is h * W + w in the unpadded plane. A
// window with no input position (which PyTorch's output size never makes) gives -inf and -1.
template <typename T>
__global__ void max_pool2d_forward_kernel(const T *x, T *out, int64_t *argmax, int64_t planes, int64_t h, int64_t w,
                                          tt_window win) {
  int64_t total = planes * win.oh * win.ow;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t ow = i % win.ow, r = i / win.ow;
    int64_t oh = r % win.oh, plane = r / win.oh;
    const T *src = x + plane * h * w;
    int64_t y0 = oh * win.sh - win.ph, x0 = ow * win.sw - win.pw;
    T best = (T)-INFINITY;
    int64_t where = -1;
    for (int64_t ki = 0; ki < win.kh; ++ki) {
      int64_t y = y0 + ki * win.dh;
      if (y < 0 || y >= h) continue;
      for (int64_t kj = 0; kj < win.kw; ++kj) {
        int64_t xc = x0 + kj * win.dw;
        if (xc < 0 || xc >= w) continue;
        T v = src[y * w + xc];
        if (where < 0 || v > best || isnan(v)) {
          best = v;
          where = y * w + xc;
        }
      }
    }
    out[i] = best;
    argmax[i] = where;
  }
}

__device__ inline void atomic_add(float *p, float v) { atomicAdd(p, v); }

__device__ inline void atomic_add(double *p, double v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600  // no native double atomicAdd before Pascal
  unsigned long long *bits = (unsigned long long *)p, seen = *bits, expected;
  do {
    expected = seen;
    seen = atomicCAS(bits, expected, __double_as_longlong(__longlong_as_double(expected) + v));
  } while (seen != expected);
#else
  atomicAdd(p, v);
#endif
}

// g scattered (added) at argmax into a zeroed gx. Scatter, not gather: the caller has only the
// argmax, not the window, so an input position cannot find the outputs that read it. Windows that
// do not overlap (stride >= kernel) write each position at most once; an argmax outside the plane
// (-1 for an empty window) is skipped, never written.
template <typename T>
__global__ void max_pool2d_backward_kernel(const T *g, const int64_t *argmax, T *gx, int64_t planes, int64_t out_plane,
                                           int64_t in_plane) {
  int64_t total = planes * out_plane;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t where = argmax[i];
    if (where >= 0 && where < in_plane) atomic_add(gx + (i / out_plane) * in_plane + where, g[i]);
  }
}

// Average pooling's window of output (oh, ow) (no dilation): rows [y0, y1) and columns [x0, x1) of
// the input, and the divisor, by PyTorch's rule: divisor_override if given (nonzero), else with
// count_include_pad the window clipped to the padded input, else the window clipped to the input.
// False for a window with no input position.
struct AvgWindow {
  int64_t y0, y1, x0, x1, divisor;
};

__device__ inline bool avg_window(int64_t oh, int64_t ow, int64_t h, int64_t w, const tt_window &win,
                                  int count_include_pad, int64_t divisor_override, AvgWindow *out) {
  int64_t y0 = oh * win.sh - win.ph, x0 = ow * win.sw - win.pw;
  int64_t y1 = min(y0 + win.kh, h + win.ph), x1 = min(x0 + win.kw, w + win.pw);
  int64_t padded_area = (y1 - y0) * (x1 - x0);
  y0 = max(y0, (int64_t)0);
  x0 = max(x0, (int64_t)0);
  y1 = min(y1, h);
  x1 = min(x1, w);
  if (y0 >= y1 || x0 >= x1) return false;
  out->y0 = y0;
  out->y1 = y1;
  out->x0 = x0;
  out->x1 = x1;
  out->divisor = divisor_override ? divisor_override : count_include_pad ? padded_area : (y1 - y0) * (x1 - x0);
  return true;
}

template <typename T>
__global__ void avg_pool2d_forward_kernel(const T *x, T *out, int64_t planes, int64_t h, int64_t w, tt_window win,
                                          int count_include_pad, int64_t divisor_override) {
  int64_t total = planes * win.oh * win.ow;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t ow = i % win.ow, r = i / win.ow;
    int64_t oh = r % win.oh, plane = r / win.oh;
    AvgWindow a;
    if (!avg_window(oh, ow, h, w, win, count_include_pad, divisor_override, &a)) {
      out[i] = 0;
      continue;
    }
    const T *src = x + plane * h * w;
    T acc = 0;
    for (int64_t y = a.y0; y < a.y1; ++y)
      for (int64_t xc = a.x0; xc < a.x1; ++xc) acc += src[y * w + xc];
    out[i] = acc / (T)a.divisor;
  }
}

// Gather form: input (y, x) is in the windows of output rows oh with oh * sh <= y + ph < oh * sh + kh
// (clipped to [0, oh)), and likewise for columns; each adds its gradient over its own divisor.
template <typename T>
__global__ void avg_pool2d_backward_kernel(const T *g, T *gx, int64_t planes, int64_t h, int64_t w, tt_window win,
                                           int count_include_pad, int64_t divisor_override) {
  int64_t total = planes * h * w;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t xc = i % w, r = i / w;
    int64_t y = r % h, plane = r / h;
    const T *src = g + plane * win.oh * win.ow;
    int64_t yp = y + win.ph, xp = xc + win.pw;  // in the padded input
    int64_t oh0 = yp < win.kh ? 0 : (yp - win.kh) / win.sh + 1, oh1 = min(yp / win.sh + 1, win.oh);
    int64_t ow0 = xp < win.kw ? 0 : (xp - win.kw) / win.sw + 1, ow1 = min(xp / win.sw + 1, win.ow);
    T acc = 0;
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        AvgWindow a;
        if (avg_window(oh, ow, h, w, win, count_include_pad, divisor_override, &a))
          acc += src[oh * win.ow + ow] / (T)a.divisor;
      }
    }
    gx[i] = acc;
  }
}

// Mean and biased variance of one channel of (N, C, S) x per block: two passes over the channel,
// both summed in double whatever T is (a float32 sum of millions of values would lose digits).
constexpr int kStatsThreads = 1024;

// Calls f(value) for this thread's share of channel `channel`: flat positions j = threadIdx.x,
// + blockDim.x, ... of its N * S values, walked as (sample b, offset k) = (j / S, j % S) with one
// add and compare per step instead of a 64-bit division.
template <typename T, typename F>
__device__ void for_channel_values(const T *x, int64_t n, int64_t c, int64_t s, int64_t channel, F f) {
  int64_t step_b = blockDim.x / s, step_k = blockDim.x % s;
  int64_t b = threadIdx.x / s, k = threadIdx.x % s;
  while (b < n) {
    f((double)x[(b * c + channel) * s + k]);
    b += step_b;
    k += step_k;
    if (k >= s) {
      k -= s;
      ++b;
    }
  }
}

template <typename T>
__global__ void channel_stats_kernel(const T *x, T *mean, T *var, int64_t n, int64_t c, int64_t s) {
  __shared__ double shared[32];
  int64_t channel = blockIdx.x;
  double count = (double)(n * s), sum = 0, squares = 0;
  for_channel_values(x, n, c, s, channel, [&](double v) { sum += v; });
  double mu = block_reduce<double, false>(sum, shared) / count;
  for_channel_values(x, n, c, s, channel, [&](double v) { squares += (v - mu) * (v - mu); });
  squares = block_reduce<double, false>(squares, shared);
  if (threadIdx.x == 0) {
    mean[channel] = (T)mu;
    var[channel] = (T)(squares / count);
  }
}

template <typename T> const char *bias_act_forward(int act, void *pre, const void *bias, void *out, int64_t rows,
                                                   int64_t cols, cudaStream_t stream) {
  int64_t n = rows * cols;
  if (n == 0) return nullptr;
  bias_act_forward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(act, (T *)pre, (const T *)bias, (T *)out, rows, cols);
  return launch_error("bias_act_forward_kernel");
}

template <typename T>
const char *bias_act_backward(int act, const void *g, const void *pre, const void *out, void *gpre, void *gbias,
                              int64_t rows, int64_t cols, cudaStream_t stream) {
  int64_t n = rows * cols;
  if (n == 0) return nullptr;
  if (act != TT_ACT_NONE || gpre != g) {
    act_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(act, (const T *)g, (const T *)pre, (const T *)out,
                                                                  (T *)gpre, n);
    if (const char *e = launch_error("act_backward_kernel")) return e;
  }
  if (gbias) {
    dim3 block(32, 8);
    column_sum_kernel<T><<<(unsigned)((cols + 31) / 32), block, 0, stream>>>((const T *)gpre, (T *)gbias, rows, cols);
    return launch_error("column_sum_kernel");
  }
  return nullptr;
}

int row_threads(int64_t c) {
  int threads = 32;
  while (threads < c && threads < 1024) threads *= 2;
  return threads;
}

}  // namespace tt_gpu

using namespace tt_gpu;

extern "C" {

const char *tt_gemm(int dtype, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                    int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, void *c, int64_t ldc,
                    int64_t stride_c, int64_t batch, void *stream) {
  if (m > 2147483647 || n > 2147483647 || k > 2147483647 || batch > 2147483647) {
    snprintf(g_error, sizeof g_error, "matmul dimensions (%lld x %lld x %lld, batch %lld) exceed cuBLAS's 32-bit limit",
             (long long)m, (long long)n, (long long)k, (long long)batch);
    return g_error;
  }
  pthread_mutex_lock(&g_handles_lock);  // the handle's stream and workspace are set per call
  cublasHandle_t handle;
  int device = 0;
  Workspace workspace;
  const char *err = handle_for_current_device(&handle, &device);
  if (!err) err = cublas_error(cublasSetStream(handle, (cudaStream_t)stream), "cublasSetStream");
  if (!err) err = workspace_for(device, stream, &workspace);
  if (!err) err = cublas_error(cublasSetWorkspace(handle, workspace.ptr, workspace.bytes), "cublasSetWorkspace");
  if (!err) {
    // One call for plain and batched products: a batch of 1 runs the same kernels as cublas<t>gemm.
    cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (dtype == TT_F32) {
      const float one = 1.0f, zero = 0.0f;
      err = cublas_error(cublasSgemmStridedBatched(handle, ta, tb, (int)m, (int)n, (int)k, &one, (const float *)a,
                                                   (int)lda, stride_a, (const float *)b, (int)ldb, stride_b, &zero,
                                                   (float *)c, (int)ldc, stride_c, (int)batch),
                         "cublasSgemmStridedBatched");
    } else {
      const double one = 1.0, zero = 0.0;
      err = cublas_error(cublasDgemmStridedBatched(handle, ta, tb, (int)m, (int)n, (int)k, &one, (const double *)a,
                                                   (int)lda, stride_a, (const double *)b, (int)ldb, stride_b, &zero,
                                                   (double *)c, (int)ldc, stride_c, (int)batch),
                         "cublasDgemmStridedBatched");
    }
  }
  pthread_mutex_unlock(&g_handles_lock);
  return err;
}

const char *tt_activation_code(const char *name, int *code) {
  for (int i = 0; i < kActivationCount; ++i) {
    if (strcmp(name, kActivationNames[i]) == 0) {
      *code = i;
      return nullptr;
    }
  }
  return "the fused kernels implement 'none', 'relu' and 'gelu'";
}

const char *tt_bias_act_forward(int dtype, int act, void *pre, const void *bias, void *out, int64_t rows, int64_t cols,
                                void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  return dtype == TT_F32 ? bias_act_forward<float>(act, pre, bias, out, rows, cols, s)
                         : bias_act_forward<double>(act, pre, bias, out, rows, cols, s);
}

const char *tt_bias_act_backward(int dtype, int act, const void *g, const void *pre, const void *out, void *gpre,
                                 void *gbias, int64_t rows, int64_t cols, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  return dtype == TT_F32 ? bias_act_backward<float>(act, g, pre, out, gpre, gbias, rows, cols, s)
                         : bias_act_backward<double>(act, g, pre, out, gpre, gbias, rows, cols, s);
}

const char *tt_softmax_xent_forward(int dtype, const void *logits, const int64_t *labels, void *loss, void *probs,
                                    int64_t n, int64_t c, void *stream) {
  if (n == 0 || c == 0) return nullptr;
  if (n > 2147483647) {
    snprintf(g_error, sizeof g_error, "softmax_xent: %lld rows exceed the grid limit", (long long)n);
    return g_error;
  }
  cudaStream_t s = (cudaStream_t)stream;
  int threads = row_threads(c);
  if (dtype == TT_F32)
    softmax_xent_forward_kernel<float><<<(unsigned)n, threads, 0, s>>>((const float *)logits, labels, (float *)loss,
                                                                         (float *)probs, c);
  else
    softmax_xent_forward_kernel<double><<<(unsigned)n, threads, 0, s>>>((const double *)logits, labels,
                                                                          (double *)loss, (double *)probs, c);
  return launch_error("softmax_xent_forward_kernel");
}

const char *tt_softmax_xent_backward(int dtype, const void *probs, const int64_t *labels, const void *scale, void *out,
                                     int64_t n, int64_t c, void *stream) {
  int64_t total = n * c;
  if (total == 0) return nullptr;
  cudaStream_t s = (cudaStream_t)stream;
  if (dtype == TT_F32)
    softmax_xent_backward_kernel<float><<<blocks_for(total), kThreads, 0, s>>>((const float *)probs, labels,
                                                                                 (const float *)scale, (float *)out, n, c);
  else
    softmax_xent_backward_kernel<double><<<blocks_for(total), kThreads, 0, s>>>(
        (const double *)probs, labels, (const double *)scale, (double *)out, n, c);
  return launch_error("softmax_xent_backward_kernel");
}

const char *tt_im2col(int dtype, const void *x, void *cols, int64_t n, int64_t c, int64_t h, int64_t w,
                      const tt_window *win, double fill, void *stream) {
  int64_t total = n * c * win->kh * win->kw * win->oh * win->ow;
  if (total == 0) return nullptr;
  cudaStream_t s = (cudaStream_t)stream;
  if (dtype == TT_F32)
    im2col_kernel<float><<<blocks_for(total), kThreads, 0, s>>>((const float *)x, (float *)cols, n * c, h, w, *win,
                                                                 (float)fill);
  else
    im2col_kernel<double><<<blocks_for(total), kThreads, 0, s>>>((const double *)x, (double *)cols, n * c, h, w, *win,
                                                                  fill);
  return launch_error("im2col_kernel");
}

const char *tt_col2im(int dtype, const void *cols, void *x, int64_t n, int64_t c, int64_t h, int64_t w,
                      const tt_window *win, void *stream) {
  int64_t total = n * c * h * w;
  if (total == 0) return nullptr;
  cudaStream_t s = (cudaStream_t)stream;
  if (dtype == TT_F32)
    col2im_kernel<float><<<blocks_for(total), kThreads, 0, s>>>((const float *)cols, (float *)x, n * c, h, w, *win);
  else
    col2im_kernel<double><<<blocks_for(total), kThreads, 0, s>>>((const double *)cols, (double *)x, n * c, h, w, *win);
  return launch_error("col2im_kernel");
}

const char *tt_max_pool2d_forward(int dtype, const void *x, void *out, int64_t *argmax, int64_t n, int64_t c,
                                  int64_t h, int64_t w, const tt_window *win, void *stream) {
  int64_t total = n * c * win->oh * win->ow;
  if (total == 0) return nullptr;
  cudaStream_t s = (cudaStream_t)stream;
  if (dtype == TT_F32)
    max_pool2d_forward_kernel<float><<<blocks_for(total), kThreads, 0, s>>>((const float *)x, (float *)out, argmax,
                                                                             n * c, h, w, *win);
  else
    max_pool2d_forward_kernel<double><<<blocks_for(total), kThreads, 0, s>>>((const double *)x, (double *)out, argmax,
                                                                              n * c, h, w, *win);
  return launch_error("max_pool2d_forward_kernel");
}

const char *tt_max_pool2d_backward(int dtype, const void *g, const int64_t *argmax, void *gx, int64_t n, int64_t c,
                                   int64_t oh, int64_t ow, int64_t h, int64_t w, void *stream) {
  int64_t planes = n * c, total = planes * oh * ow;
  if (planes * h * w == 0) return nullptr;
  cudaStream_t s = (cudaStream_t)stream;
  size_t bytes = (size_t)(planes * h * w) * (dtype == TT_F32 ? sizeof(float) : sizeof(double));
  if (const char *e = cuda_error(cudaMemsetAsync(gx, 0, bytes, s), "cudaMemsetAsync (max_pool2d_backward)")) return e;
  if (total == 0) return nullptr;
  if (dtype == TT_F32)
    max_pool2d_backward_kernel<float><<<blocks_for(total), kThreads, 0, s>>>((const float *)g, argmax, (float *)gx,
                                                                              planes, oh * ow, h * w);
  else
    max_pool2d_backward_kernel<double><<<blocks_for(total), kThreads, 0, s>>>((const double *)g, argmax, (double *)gx,
                                                                               planes, oh * ow, h * w);
  return launch_error("max_pool2d_backward_kernel");
}

const char *tt_avg_pool2d_forward(int dtype, const void *x, void *out, int64_t n, int64_t c, int64_t h, int64_t w,
                                  const tt_window *win, int count_include_pad, int64_t divisor_override,
                                  void *stream) {
  int64_t total = n * c * win->oh * win->ow;
  if (total == 0) return nullptr;
  cudaStream_t s = (cudaStream_t)stream;
  if (dtype == TT_F32)
    avg_pool2d_forward_kernel<float><<<blocks_for(total), kThreads, 0, s>>>(
        (const float *)x, (float *)out, n * c, h, w, *win, count_include_pad, divisor_override);
  else
    avg_pool2d_forward_kernel<double><<<blocks_for(total), kThreads, 0, s>>>(
        (const double *)x, (double *)out, n * c, h, w, *win, count_include_pad, divisor_override);
  return launch_error("avg_pool2d_forward_kernel");
}

const char *tt_avg_pool2d_backward(int dtype, const void *g, void *gx, int64_t n, int64_t c, int64_t h, int64_t w,
                                   const tt_window *win, int count_include_pad, int64_t divisor_override,
                                   void *stream) {
  int64_t total = n * c * h * w;
  if (total == 0) return nullptr;
  cudaStream_t s = (cudaStream_t)stream;
  if (dtype == TT_F32)
    avg_pool2d_backward_kernel<float><<<blocks_for(total), kThreads, 0, s>>>(
        (const float *)g, (float *)gx, n * c, h, w, *win, count_include_pad, divisor_override);
  else
    avg_pool2d_backward_kernel<double><<<blocks_for(total), kThreads, 0, s>>>(
        (const double *)g, (double *)gx, n * c, h, w, *win, count_include_pad, divisor_override);
  return launch_error("avg_pool2d_backward_kernel");
}

const char *tt_batch_norm_stats(int dtype, const void *x, void *mean, void *var, int64_t n, int64_t c, int64_t s,
                                void *stream) {
  if (c == 0) return nullptr;
  if (c > 2147483647) {
    snprintf(g_error, sizeof g_error, "batch_norm_stats: %lld channels exceed the grid limit", (long long)c);
    return g_error;
  }
  cudaStream_t st = (cudaStream_t)stream;
  if (dtype == TT_F32)
    channel_stats_kernel<float><<<(unsigned)c, kStatsThreads, 0, st>>>((const float *)x, (float *)mean, (float *)var,
                                                                        n, c, s);
  else
    channel_stats_kernel<double><<<(unsigned)c, kStatsThreads, 0, st>>>((const double *)x, (double *)mean,
                                                                         (double *)var, n, c, s);
  return launch_error("channel_stats_kernel");
}

const char *tt_runtime_version(int *version) { return cuda_error(cudaRuntimeGetVersion(version), "cudaRuntimeGetVersion"); }

const char *tt_driver_version(int *version) { return cuda_error(cudaDriverGetVersion(version), "cudaDriverGetVersion"); }

const char *tt_device_count(int *count) { return cuda_error(cudaGetDeviceCount(count), "cudaGetDeviceCount"); }

const char *tt_cublas_version(int *version) {
  int major = 0, minor = 0, patch = 0;
  const char *e = cublas_error(cublasGetProperty(MAJOR_VERSION, &major), "cublasGetProperty");
  if (!e) e = cublas_error(cublasGetProperty(MINOR_VERSION, &minor), "cublasGetProperty");
  if (!e) e = cublas_error(cublasGetProperty(PATCH_LEVEL, &patch), "cublasGetProperty");
  *version = major * 10000 + minor * 100 + patch;
  return e;
}

const char *tt_pointer_device(const void *ptr, int *device, int *is_device_memory) {
  cudaPointerAttributes attr;
  const char *e = cuda_error(cudaPointerGetAttributes(&attr, ptr), "cudaPointerGetAttributes");
  if (e) return e;
  *device = attr.device;
  *is_device_memory = attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
  return nullptr;
}

const char *tt_get_device(int *device) { return cuda_error(cudaGetDevice(device), "cudaGetDevice"); }

const char *tt_set_device(int device) { return cuda_error(cudaSetDevice(device), "cudaSetDevice"); }

const char *tt_kernel_image(int device, int *binary_version, int *ptx_version) {
  // Every kernel of this file, so that a GPU the fatbin cannot serve is found at load, not at first use.
  struct Kernel {
    const void *fn;
    const char *name;
  };
  const Kernel kernels[] = {
      {(const void *)bias_act_forward_kernel<float>, "bias_act_forward_kernel<float>"},
      {(const void *)bias_act_forward_kernel<double>, "bias_act_forward_kernel<double>"},
      {(const void *)act_backward_kernel<float>, "act_backward_kernel<float>"},
      {(const void *)act_backward_kernel<double>, "act_backward_kernel<double>"},
      {(const void *)column_sum_kernel<float>, "column_sum_kernel<float>"},
      {(const void *)column_sum_kernel<double>, "column_sum_kernel<double>"},
      {(const void *)softmax_xent_forward_kernel<float>, "softmax_xent_forward_kernel<float>"},
      {(const void *)softmax_xent_forward_kernel<double>, "softmax_xent_forward_kernel<double>"},
      {(const void *)softmax_xent_backward_kernel<float>, "softmax_xent_backward_kernel<float>"},
      {(const void *)softmax_xent_backward_kernel<double>, "softmax_xent_backward_kernel<double>"},
      {(const void *)im2col_kernel<float>, "im2col_kernel<float>"},
      {(const void *)im2col_kernel<double>, "im2col_kernel<double>"},
      {(const void *)col2im_kernel<float>, "col2im_kernel<float>"},
      {(const void *)col2im_kernel<double>, "col2im_kernel<double>"},
      {(const void *)max_pool2d_forward_kernel<float>, "max_pool2d_forward_kernel<float>"},
      {(const void *)max_pool2d_forward_kernel<double>, "max_pool2d_forward_kernel<double>"},
      {(const void *)max_pool2d_backward_kernel<float>, "max_pool2d_backward_kernel<float>"},
      {(const void *)max_pool2d_backward_kernel<double>, "max_pool2d_backward_kernel<double>"},
      {(const void *)avg_pool2d_forward_kernel<float>, "avg_pool2d_forward_kernel<float>"},
      {(const void *)avg_pool2d_forward_kernel<double>, "avg_pool2d_forward_kernel<double>"},
      {(const void *)avg_pool2d_backward_kernel<float>, "avg_pool2d_backward_kernel<float>"},
      {(const void *)avg_pool2d_backward_kernel<double>, "avg_pool2d_backward_kernel<double>"},
      {(const void *)channel_stats_kernel<float>, "channel_stats_kernel<float>"},
      {(const void *)channel_stats_kernel<double>, "channel_stats_kernel<double>"},
  };
  int previous = 0;
  if (const char *e = cuda_error(cudaGetDevice(&previous), "cudaGetDevice")) return e;
  if (const char *e = cuda_error(cudaSetDevice(device), "cudaSetDevice")) return e;
  const char *e = nullptr;
  for (const Kernel &k : kernels) {
    cudaFuncAttributes attr;
    char where[96];
    snprintf(where, sizeof where, "cudaFuncGetAttributes(%s)", k.name);
    e = cuda_error(cudaFuncGetAttributes(&attr, k.fn), where);
    if (e) break;
    *binary_version = attr.binaryVersion;
    *ptx_version = attr.ptxVersion;
  }
  if (e) (void)cudaGetLastError();  // clear it: the next launch must not report this probe's error
  cudaSetDevice(previous);
  return e;
}

}  // extern "C"
