/* SPDX-License-Identifier: MIT */
/*
 * kernels/kern_ops.h — the layer kernels, one table per instruction set.
 *
 * Every kernel has a plain C version (kernels/NAME_ref.c, the reference) and the binary ones have
 * AVX2 and AVX-512 (VPOPCNTDQ) versions (kernels/NAME_avx2.c, NAME_avx512.c, compiled with their
 * own flags). kern_ops_get() returns the best table for this CPU, chosen once from
 * __builtin_cpu_supports; SPLITNIC_ISA=ref|avx2|avx512 in the environment forces one.
 * Tests compare every table to kern_ops_ref bit for bit.
 *
 * Layouts are those of model/model.h. All kernels are single-threaded, allocate nothing, and
 * take a batch: images are back to back (stride = one image's words/bytes/elements).
 */
#ifndef KERN_OPS_H
#define KERN_OPS_H

#include <stdint.h>
#include <stddef.h>

/* Per-output thresholds: bit = (dot >= thr[o]) ^ flip[o] (see model/model.h). */
struct kern_thresh {
	const int32_t *thr;
	const uint8_t *flip;
};

/* Per-channel decision points and error bounds of decide_pack. */
struct kern_decide {
	const float *thr, *e; /* [o] */
	const uint8_t *flip;  /* [o] */
};

struct kern_conv_geom {
	uint32_t c, h, w;   /* input */
	uint32_t o, oh, ow; /* output */
	uint32_t k, stride, pad;
};

/*
 * Dot products along a contiguous axis, the one kernel of every float layer (dense, and conv as
 * a dot of each filter with each pixel's window):
 *
 *     c[i * ldci + j * ldcj] = sum_k a_i[k] * b_j[k]  (+ bias[i])     i < m, j < n
 *
 * over K = nseg * seg elements: row i of a is a + i * lda (K contiguous elements); segment s of
 * row j of b is seg contiguous elements at b + boff[j] + s * bstride (boff NULL: b + j * ldb
 * + s * bstride). A conv over a zero-padded pixel-major image is k segments (one per kernel row)
 * of k * C elements; dense is one segment.
 *
 * The order is fixed, so every table, batch size and blocking gives the same bits: LANES
 * accumulators (16 for float, 8 for double), all starting at +0; for each segment in turn, for
 * each group of LANES elements in turn (the last group of a segment padded with zeros), lane l
 * takes the group's element l: acc[l] = fma(a, b, acc[l]); then the halving tree
 * acc[l] += acc[l + h] for h = LANES/2, ..., 1; then acc[0] + bias[i]. A float lane sums at
 * most K / 16 + nseg + 4 roundings deep (what the certified bounds of kernels/frun.c use).
 *
 * dot_u8 is the integer form for bounds: a int8 (0..127), b uint8, c int32, exact in any order
 * while K * 255 * 127 < 2^31 (K <= KERN_DOT_U8_MAXK); bias unused.
 */
struct kern_dot {
	const void *a;
	size_t lda;
	const void *b;
	const uint32_t *boff;
	size_t ldb, bstride;
	uint32_t m, n, nseg, seg;
	void *c;
	size_t ldci, ldcj;
	const void *bias;
};

#define KERN_DOT_U8_MAXK 66000u

/*
 * A dense layer's dot products: y[b][o] = w_o . x_b (+ bias[o]) for batch images of n inputs
 * and out outputs (w: [out][n], x: [batch][n], y: [batch][out]; float or double alike).
 */
static inline struct kern_dot kern_dot_dense(const void *w, const void *x, uint32_t batch,
					     uint32_t n, uint32_t out, const void *bias, void *y)
{
	struct kern_dot d; /* every member set: C and the CUDA sources' C++ alike */

	d.a = w, d.lda = n, d.b = x, d.boff = NULL, d.ldb = n, d.bstride = 0;
	d.m = out, d.n = batch, d.nseg = 1, d.seg = n;
	d.c = y, d.ldci = 1, d.ldcj = out, d.bias = bias;
	return d;
}

struct kern_bin_ops {
	const char *name; /* "ref", "avx2", "avx512" */

	/*
	 * Binary dense, BITS input. x: [batch][words(n)], w: [out][words(n)].
	 * bdense:     y[b][o] = n - 2 * popcount(x_b ^ w_o)            (int32 [batch][out])
	 * bdense_thr: y bits [batch][words(out)], bit o = (dot >= thr[o]) ^ flip[o]; tail bits 0.
	 * batch == 1 is the GEMV path, batch > 1 the blocked GEMM path.
	 */
	void (*bdense)(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
		       uint32_t n, int32_t *y);
	void (*bdense_thr)(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			   uint32_t n, const struct kern_thresh *t, uint64_t *y);

	/*
	 * Binary dense, U8 input (bit-plane decomposition, exact):
	 * dot[b][o] = sum_i w_o,i * x_b,i, w = +-1 from the packed signs, x in 0..255.
	 * scratch: at least kern_bdense_u8_scratch(n, batch) bytes, 64-byte aligned.
	 */
	void (*bdense_u8)(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			  uint32_t n, int32_t *y, void *scratch);
	void (*bdense_u8_thr)(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			      uint32_t n, const struct kern_thresh *t, uint64_t *y, void *scratch);

	/*
	 * Binary conv, BITS input (channel-packed, pixel-major), w: [o][k][k][words(c)].
	 * bconv:     y int32 [batch][o][oh][ow] (C-major), padded taps contribute 0.
	 * bconv_thr: y BITS [batch][oh][ow][words(o)].
	 */
	void (*bconv)(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		      const uint64_t *w, int32_t *y);
	void (*bconv_thr)(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			  const uint64_t *w, const struct kern_thresh *t, uint64_t *y);

	/* Sign + pack fused: F64 (c,h,w) C-major -> BITS (c,h,w) channel-packed; x >= 0 -> 1. */
	void (*sign_pack)(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			  uint64_t *y);

	/* Integer-valued F64 -> BITS with per-channel thresholds (MODEL_OP_THRESHOLD). */
	void (*threshold_pack)(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			       const struct kern_thresh *t, uint64_t *y);

	/* Max-pool on BITS (OR over the window), floor mode, no padding. */
	void (*maxpool_bits)(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			     uint32_t k, uint32_t stride, uint64_t *y);

	/*
	 * Max-pool of thresholded bits, per channel: channel ch is the AND over the window where
	 * bit ch of and_mask (words(c) words, as one pixel) is 1, else the OR. A threshold that
	 * is non-increasing in its input (flip 1) turns max-then-threshold into an AND.
	 */
	void (*maxpool_bits_and)(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
				 uint32_t w, uint32_t k, uint32_t stride, const uint64_t *and_mask,
				 uint64_t *y);

	/*
	 * Float32 convolution for float layers whose outputs reach only decisions
	 * (kernels/fconv.c): xp (c, h + 2 pad, w + 2 pad) float32, zero-padded; wt [n][o] with
	 * n = c*k*k taps in (c, ky, kx) order; y [oh*ow][o], pixel-major. Any summation order,
	 * with or without FMA: |y - exact| <= gamma_n * sum |w x| (the bound fconv.c relies on);
	 * the tables differ in rounding only.
	 */
	void (*sconv)(const float *xp, const struct kern_conv_geom *g, const float *wt, float *y);
	/*
	 * The same with the weights in blocks of KERN_SCONV_BLK filters, as kern_sconv_pack()
	 * lays them out: wb [ceil(o / KERN_SCONV_BLK)][n][KERN_SCONV_BLK], the last block's
	 * missing filters 0 (each block's weights are read as one stream).
	 */
	void (*sconv_packed)(const float *xp, const struct kern_conv_geom *g, const float *wb,
			     float *y);

	/*
	 * Decisions from float32 values with an error bound (kernels/fconv.c), all in float32:
	 * y [np][o] (np pixels of one image, pixel-major); output (p, c) is unsure where
	 * |y - thr[c]| <= e[c] and e[c] > 0, else its bit is (y - thr[c] >= 0) ^ flip[c].
	 * bits: BITS [np][words(o)], unsure outputs 0; their indices p * o + c go to `unsure`
	 * in any order. Returns how many are unsure.
	 */
	uint32_t (*decide_pack)(const float *y, uint32_t o, uint32_t np,
				const struct kern_decide *d, uint64_t *bits, uint32_t *unsure);

	/* Float dot products in the fixed order of struct kern_dot; bit-identical across tables. */
	void (*dot_f32)(const struct kern_dot *d);
	void (*dot_f64)(const struct kern_dot *d);
	void (*dot_u8)(const struct kern_dot *d);
};

extern const struct kern_bin_ops kern_ops_ref;
extern const struct kern_bin_ops kern_ops_avx2;
extern const struct kern_bin_ops kern_ops_avx512;

/* The table for this CPU (chosen once; SPLITNIC_ISA overrides). Never NULL. */
const struct kern_bin_ops *kern_ops_get(void);
/* A table by name ("ref", "avx2", "avx512") if this CPU can run it, else NULL. */
const struct kern_bin_ops *kern_ops_by_name(const char *name);
/* The CPU features table `name` needs and this CPU lacks, as words ("avx512vpopcntdq"; "" when
 * none is missing, NULL for an unknown name): why kern_ops_by_name() said NULL. */
const char *kern_ops_missing(const char *name);

size_t kern_bdense_u8_scratch(uint32_t n, uint32_t batch);

#define KERN_SCONV_BLK 32
/* Floats of sconv_packed's weights for n taps and o filters. */
size_t kern_sconv_packed_elems(uint32_t n, uint32_t o);
/* wt [n][o] (sconv's layout) -> wb (sconv_packed's). */
void kern_sconv_pack(const float *wt, uint32_t n, uint32_t o, float *wb);

/*
 * Layout helpers (reference C only; not on hot paths that matter).
 * unpack: BITS (c,h,w) channel-packed -> F64 +-1.0 C-major.
 * flatten_bits: BITS (c,h,w) channel-packed -> flat C-major bits, ceil(c*h*w/64) words.
 */
void kern_unpack_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      double *y);
void kern_flatten_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		       uint64_t *y);

/*
 * Float kernels in double, the exact precision (docs/float.md).
 * conv: each pixel's window as a row (col scratch of kern_conv_scratch(g) doubles), then dot_f64
 * with each filter, + b. w [o][c][k][k] (window order (c, ky, kx)), b may be NULL.
 * dense: y[b] = W x[b] + bias by dot_f64. w [out][n], b may be NULL.
 * Each output is one struct kern_dot sum: the same bits at any batch size and from any table.
 */
size_t kern_conv_scratch(const struct kern_conv_geom *g);
void kern_conv_f64(const double *x, uint32_t batch, const struct kern_conv_geom *g, const double *w,
		   const double *b, double *col, double *y);
void kern_dense_f64(const double *x, uint32_t batch, uint32_t n, const double *w, uint32_t out,
		    const double *b, double *y);
void kern_bias_f64(double *x, uint32_t batch, uint32_t c, uint32_t hw, const double *b);
void kern_batchnorm_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw,
			const double *mean, const double *sd, const double *gamma,
			const double *beta, double *y);
void kern_relu_f64(const double *x, size_t n, double *y);
void kern_maxpool_f64(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      uint32_t k, uint32_t stride, double *y);
void kern_lrn_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw, uint32_t size,
		  double alpha, double beta, double k, double *y);
/* pads: top, left, bottom, right; the border is `fill`. */
void kern_pad_f64(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		  const uint32_t pads[4], double fill, double *y);
void kern_sign3_f64(const double *x, size_t n, double *y);

/* OpenBLAS single-precision entry points, for benchmarks against float baselines. */
void kern_blas_sgemv(const float *a, uint32_t m, uint32_t n, const float *x, float *y);
void kern_blas_sgemm(const float *a, uint32_t m, uint32_t k, const float *b, uint32_t n, float *c);
void kern_blas_threads(int n);
/*
 * For a process that must run OpenBLAS on its calling thread only (splitnic-host, -nic: the
 * packet path's lcores): OpenBLAS sizes and starts its thread pool when the library loads,
 * before main, from OPENBLAS_NUM_THREADS. Unless that is "1" already, set it and re-execute
 * the program (/proc/self/exe, argv) once; returns 0 when it is set, -errno if exec failed.
 * Call first thing in main.
 */
int kern_blas_one_thread(char **argv);

#endif /* KERN_OPS_H */
