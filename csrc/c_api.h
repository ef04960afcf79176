/* The extension's C ABI: everything the Python binding (cuda_binding.cpp) calls in the CUDA half
 * (cuda_gpu.cu, compiled by nvcc): cuBLAS products, fused kernels, convolution, pooling and
 * batch-norm statistics kernels, device and version queries. Plain C on purpose: the two halves
 * may be built by different C++ compilers and runtimes (nvcc+gcc and zig's clang for old-glibc
 * wheels), so nothing C++ crosses this line.
 *
 * Every function returns NULL on success, or a message naming the CUDA or cuBLAS error
 * (e.g. "cudaErrorInsufficientDriver (35) in cudaGetDeviceCount: ..."), valid until the next
 * call on the same thread. Pointers are device pointers on the current device; `stream` is a
 * cudaStream_t (CuPy's current stream).
 */
#ifndef TINYTENSOR_C_API_H
#define TINYTENSOR_C_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tt_dtype { TT_F32 = 0, TT_F64 = 1 };

/* C[i] = op(A[i]) op(B[i]) for `batch` products in cuBLAS's column-major convention (the binding
 * maps row-major onto it); a stride of 0 repeats one matrix; batch 1 is a plain product. */
const char *tt_gemm(int dtype, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                    int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, void *c, int64_t ldc,
                    int64_t stride_c, int64_t batch, void *stream);

/* The code the bias + activation kernels take for an activation's name ("none", "relu", ...);
 * for a name they do not implement, a message naming the ones they do. */
const char *tt_activation_code(const char *name, int *code);

/* pre[r, c] += bias[c] (bias may be NULL); out = act(pre). out may equal pre when act is "none". */
const char *tt_bias_act_forward(int dtype, int act, void *pre, const void *bias, void *out,
                                int64_t rows, int64_t cols, void *stream);

/* gpre = g * act'(pre); gbias[c] = sum over rows of gpre (gbias may be NULL). */
const char *tt_bias_act_backward(int dtype, int act, const void *g, const void *pre, const void *out,
                                 void *gpre, void *gbias, int64_t rows, int64_t cols, void *stream);

/* loss[r] = logsumexp(x[r]) - x[r, label[r]] and probs = softmax(x), one block per row.
 * A label outside [0, c) gives a NaN loss for that row, never an out-of-bounds read. */
const char *tt_softmax_xent_forward(int dtype, const void *logits, const int64_t *labels, void *loss,
                                    void *probs, int64_t n, int64_t c, void *stream);

/* out[r, j] = (probs[r, j] - (j == label[r])) * scale[r]. */
const char *tt_softmax_xent_backward(int dtype, const void *probs, const int64_t *labels,
                                     const void *scale, void *out, int64_t n, int64_t c, void *stream);

/* A window placement over (N, C, H, W) planes, as tinytensor.windows.Window: kernel kh x kw, stride,
 * padding (each side) and dilation per axis, and the oh x ow output positions. Output (oh, ow)
 * reads input row oh * sh - ph + i * dh for kernel row i (columns alike); outside the input is
 * padding. All arrays below are C-contiguous; n, c, h, w are the input's (N, C, H, W). */
struct tt_window {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

/* cols (N, C, kh, kw, oh, ow) = every window of x; padding reads `fill`. */
const char *tt_im2col(int dtype, const void *x, void *cols, int64_t n, int64_t c, int64_t h, int64_t w,
                      const struct tt_window *win, double fill, void *stream);

/* x (N, C, H, W) = im2col's adjoint: each position the sum of the cols entries that read it. */
const char *tt_col2im(int dtype, const void *cols, void *x, int64_t n, int64_t c, int64_t h, int64_t w,
                      const struct tt_window *win, void *stream);

/* out and argmax (N, C, oh, ow): each window's max (padding never wins, NaN always does) and its
 * position y * w + x in the unpadded plane, the first of equal values. */
const char *tt_max_pool2d_forward(int dtype, const void *x, void *out, int64_t *argmax, int64_t n, int64_t c,
                                  int64_t h, int64_t w, const struct tt_window *win, void *stream);

/* gx (N, C, h, w) = zeros with g (N, C, oh, ow) added at argmax (atomically: overlapping windows may
 * add in any order); an argmax outside [0, h * w) is skipped. */
const char *tt_max_pool2d_backward(int dtype, const void *g, const int64_t *argmax, void *gx, int64_t n, int64_t c,
                                   int64_t oh, int64_t ow, int64_t h, int64_t w, void *stream);

/* out (N, C, oh, ow) = each window's sum over its divisor (no dilation): divisor_override when
 * nonzero, else the window clipped to the padded input (count_include_pad) or to the input. */
const char *tt_avg_pool2d_forward(int dtype, const void *x, void *out, int64_t n, int64_t c, int64_t h, int64_t w,
                                  const struct tt_window *win, int count_include_pad, int64_t divisor_override,
                                  void *stream);

/* gx (N, C, h, w) from g (N, C, oh, ow): the adjoint of tt_avg_pool2d_forward. */
const char *tt_avg_pool2d_backward(int dtype, const void *g, void *gx, int64_t n, int64_t c, int64_t h, int64_t w,
                                   const struct tt_window *win, int count_include_pad, int64_t divisor_override,
                                   void *stream);

/* mean and var (C,) of x (N, C, s): each channel's mean and biased variance, summed in double. */
const char *tt_batch_norm_stats(int dtype, const void *x, void *mean, void *var, int64_t n, int64_t c, int64_t s,
                                void *stream);

const char *tt_runtime_version(int *version);   /* CUDA runtime linked (no GPU needed) */
const char *tt_driver_version(int *version);    /* 0 when no driver is installed */
const char *tt_device_count(int *count);
const char *tt_cublas_version(int *version);    /* of the libcublas actually loaded */
const char *tt_pointer_device(const void *ptr, int *device, int *is_device_memory);
const char *tt_get_device(int *device);
const char *tt_set_device(int device);
/* Which image the driver picked for our kernels on `device`: SASS arch and PTX version (x10).
 * Loads every kernel, so it fails (naming the kernel) when the fatbin has nothing this GPU can run
 * (cudaErrorNoKernelImageForDevice) or the driver cannot JIT its PTX (cudaErrorUnsupportedPtxVersion). */
const char *tt_kernel_image(int device, int *binary_version, int *ptx_version);

#ifdef __cplusplus
}
#endif

#endif
