/* SPDX-License-Identifier: MIT */
/*
 * model/model.h — tensors, the compiled layer ops, the loaded model.
 *
 * A model enters as the interchange pair arch.json + weights.npz (docs/model-format.md), is
 * compiled by the converter (model_convert) into a sequence of ops and written as a model file
 * (model/model_file.h documents it byte by byte); model_load maps and validates it.
 *
 * Tensor formats at run time (one image; a batch is N images back to back):
 *
 *   MODEL_FMT_U8    (C,H,W) bytes, C-major ([c][h][w]). Model input only, 0..255 as integers.
 *   MODEL_FMT_F32   (C,H,W) float, C-major. Model input only (converted to F64 by MODEL_OP_CAST).
 *   MODEL_FMT_F64   (C,H,W) double, C-major. Every real-valued activation: the spec's reference
 *                  is float64, and computing in float64 keeps every sign decision equal to it.
 *                  (A float conv whose outputs reach only a sign or threshold runs in float32
 *                  inside kern_forward_range, with a bound that proves the same bits:
 *                  kernels/fconv.c.)
 *   MODEL_FMT_BITS  (C,H,W) of +1/-1 packed along channels: pixel-major ([h][w][word]) with
 *                  wpp = ceil(C/64) 64-bit words per pixel; channel c is bit (c % 64) of word
 *                  (c / 64); bit 1 = +1, bit 0 = -1; the unused high bits of a pixel's last word
 *                  are 0. A flat vector (n,1,1) is ceil(n/64) words, element i in bit i%64 of
 *                  word i/64 (the wire protocol's packed layout).
 *
 * Binary arithmetic: for x, w in {+1,-1}^n packed as above, dot(x, w) = n - 2*popcount(x ^ w)
 * (tail bits are 0 in both, so they never count).
 */
#ifndef MODEL_MODEL_H
#define MODEL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum model_fmt {
	MODEL_FMT_U8 = 0,
	MODEL_FMT_F32 = 1,
	MODEL_FMT_F64 = 2,
	MODEL_FMT_BITS = 3,
};

struct model_shape {
	uint32_t fmt; /* enum model_fmt */
	uint32_t c, h, w;
};

/*
 * Compiled ops. in/out are the op's tensor shapes; "per channel" means per c of (C,H,W), which
 * for a flat vector (n,1,1) is per feature. Blob layouts (blob[0..2]) are given per op.
 *
 * MODEL_OP_CAST        U8|F32 -> F64, same shape.
 * MODEL_OP_FLATTEN     (C,H,W) -> (C*H*W,1,1), same fmt. For BITS this repacks pixel-major
 *                     channel-packed words into the flat C-major bit order.
 * MODEL_OP_DENSE       F64 (n) -> F64 (out): y = W x (+ b).
 *                     blob0: W as double [out][n], or, with MODEL_LF_BINW, the signs packed
 *                     [out][ceil(n/64)] (bit 1 where W >= 0), expanded to +-1.0 at load.
 *                     blob1 (MODEL_LF_BIAS): b as double [out].
 * MODEL_OP_CONV        F64 (C,H,W) -> F64 (O,OH,OW): cross-correlation, zero padding `pad`,
 *                     `stride`, square `kernel` k; OH = (H + 2 pad - k) / stride + 1.
 *                     blob0: W double [O][C][k][k], or with MODEL_LF_BINW packed signs
 *                     [O][ceil(C*k*k/64)] in (c,ky,kx) order. blob1 (MODEL_LF_BIAS): double [O].
 * MODEL_OP_BDENSE      BITS (n) -> F64 (out) holding the integer dot, or, with MODEL_LF_THRESH,
 *                     BITS (out) with bit o = (dot_o >= thr[o]) ^ flip[o].
 *                     blob0: W packed [out][ceil(n/64)]; blob1 (THRESH): int32 thr[out];
 *                     blob2 (THRESH): uint8 flip[out].
 * MODEL_OP_BDENSE_U8   U8 (n) -> as MODEL_OP_BDENSE; dot = sum_i w_i x_i (x_i 0..255) computed
 *                     exactly by bit-plane decomposition. Same blobs.
 * MODEL_OP_BCONV       BITS (C,H,W) -> F64 (O,OH,OW) integer dots, or with MODEL_LF_THRESH BITS
 *                     (O,OH,OW). Taps that fall in the zero padding contribute 0.
 *                     blob0: W packed [O][k][k][ceil(C/64)] (channel-packed per tap);
 *                     blob1/blob2 as BDENSE (per output channel).
 * MODEL_OP_BIAS        F64 -> F64: y = x + b[c]. blob0: double b[C].
 * MODEL_OP_BATCHNORM   F64 -> F64: y = (x - mean[c]) / sd[c] * gamma[c] + beta[c], evaluated
 *                     in this order in double. blob0: double [4][C], rows mean, sd, gamma,
 *                     beta, with sd = sqrt(var + eps) computed in double by the converter.
 * MODEL_OP_THRESHOLD   F64 holding integers -> BITS: bit = (x >= thr[c]) ^ flip[c].
 *                     blob0: int32 thr[C]; blob1: uint8 flip[C].
 * MODEL_OP_SIGN        F64 -> BITS: bit = (x >= 0) (so -0.0 gives +1).
 * MODEL_OP_UNPACK      BITS -> F64: +1.0 / -1.0.
 * MODEL_OP_RELU        F64 -> F64.
 * MODEL_OP_MAXPOOL     F64 -> F64, window `kernel`, `stride`, floor mode, no padding.
 * MODEL_OP_MAXPOOL_BITS BITS -> BITS: OR over the window (max of +-1), or, with MODEL_LF_ANDPOOL,
 *                     per channel the AND where bit c of blob0 is 1: blob0 is u64 [words(C)]
 *                     (one pixel's words, tail bits 0). The compiler emits it for a max-pool
 *                     followed by batch-norms and a sign, folded into thresholds ahead of the
 *                     pool: sign(bn(max y)) is the OR of sign(bn(y)) over the window, the AND
 *                     where the batch-norms after the pool decrease (a negative gamma), either
 *                     where they are constant (a zero gamma).
 * MODEL_OP_LRN         F64 -> F64, Caffe ACROSS_CHANNELS: y = x / (k + alpha/size * sum x^2)^beta
 *                     over channels [c - size/2, c + size/2] clipped to [0, C).
 *
 * Ops beyond the interchange spec, produced only by the ONNX importer (model/onnx/):
 *
 * MODEL_OP_PAD         F64 (C,H,W) -> F64 (C, H+top+bottom, W+left+right): the input placed at
 *                     (top, left), the border filled with 0, or with -inf under MODEL_LF_PADNEG
 *                     (max-pool padding, which never wins a window). blob0: uint32
 *                     [top, left, bottom, right]. Asymmetric conv padding and ceil-mode pooling
 *                     are a PAD before a CONV / MAXPOOL of pad 0.
 * MODEL_OP_SIGN3       F64 -> F64: ONNX Sign, +1.0 if x > 0, -1.0 if x < 0, 0.0 if x is +-0.0.
 *
 * A threshold pair (thr, flip) encodes every exact folding of bias + batch-norm + sign over an
 * integer: "x >= t" is (t, 0); "x <= t" is (t + 1, 1); always +1 is (INT32_MIN, 0); always -1
 * is (INT32_MIN, 1).
 */
enum model_op {
	MODEL_OP_CAST = 1,
	MODEL_OP_FLATTEN = 2,
	MODEL_OP_DENSE = 3,
	MODEL_OP_CONV = 4,
	MODEL_OP_BDENSE = 5,
	MODEL_OP_BDENSE_U8 = 6,
	MODEL_OP_BCONV = 7,
	MODEL_OP_BIAS = 8,
	MODEL_OP_BATCHNORM = 9,
	MODEL_OP_THRESHOLD = 10,
	MODEL_OP_SIGN = 11,
	MODEL_OP_UNPACK = 12,
	MODEL_OP_RELU = 13,
	MODEL_OP_MAXPOOL = 14,
	MODEL_OP_MAXPOOL_BITS = 15,
	MODEL_OP_LRN = 16,
	MODEL_OP_PAD = 17,
	MODEL_OP_SIGN3 = 18,
	MODEL_OP__COUNT
};

#define MODEL_LF_BIAS	 0x1u  /* blob1 holds a bias */
#define MODEL_LF_BINW	 0x2u  /* blob0 holds packed signs of a binary-weight float layer */
#define MODEL_LF_THRESH	 0x4u  /* binary op folded with bias/batch-norm/sign into thresholds */
#define MODEL_LF_PADNEG	 0x8u  /* MODEL_OP_PAD fills with -inf instead of 0 */
#define MODEL_LF_ANDPOOL 0x10u /* maxpool_bits: blob0 marks the channels pooled by AND */

/*
 * The interchange layer types (arch.json), kept in the model file for inspect/analyze.
 * MODEL_SRC_PAD and MODEL_SRC_SIGN3 are not in the spec: only the ONNX importer makes them
 * (an explicit padding; ONNX's three-valued Sign, which the compiler turns into one bit where
 * it proves no input is 0).
 */
enum model_src_type {
	MODEL_SRC_DENSE = 1,
	MODEL_SRC_CONV = 2,
	MODEL_SRC_BATCHNORM = 3,
	MODEL_SRC_SIGN = 4,
	MODEL_SRC_RELU = 5,
	MODEL_SRC_MAXPOOL = 6,
	MODEL_SRC_FLATTEN = 7,
	MODEL_SRC_LRN = 8,
	MODEL_SRC_PAD = 9,
	MODEL_SRC_SIGN3 = 10,
};

#define MODEL_SF_BIAS 0x1u
#define MODEL_SF_BINW 0x2u

struct model_src_layer {
	uint32_t type;	  /* enum model_src_type */
	uint32_t flags;	  /* MODEL_SF_* */
	uint32_t c, h, w; /* output shape; a flat vector is (n,1,1) */
	uint32_t kernel, stride, pad;
};

#define MODEL_NBLOB 3

struct model_layer {
	uint32_t op; /* enum model_op */
	uint32_t flags;
	uint32_t src_first, src_count; /* the arch.json layers this op implements */
	struct model_shape in, out;
	uint32_t kernel, stride, pad, lrn_size;
	double lrn_alpha, lrn_beta, lrn_k;
	const void *blob[MODEL_NBLOB]; /* into the mapped file, 64-byte aligned; NULL if unused */
	uint64_t blob_size[MODEL_NBLOB];
	double
	    *wexp; /* MODEL_LF_BINW: weights expanded to +-1.0 at load (same layout as double W) */
};

#define MODEL_NAME_MAX 56

struct model {
	char name[MODEL_NAME_MAX];
	struct model_shape input; /* fmt U8 or F32 */
	uint32_t n_src, n_layers;
	struct model_src_layer *src;
	struct model_layer *layers;
	void *map;
	size_t map_size;
};

/*
 * Elements of a shape, and bytes of one image in the shape's format. Inline, like the class
 * count below, so that the GPU executor (a shared object of its own) needs no kernels library.
 */
static inline uint32_t model_words(uint64_t bits)
{
	return (uint32_t)((bits + 63) / 64);
}

static inline uint64_t model_shape_elems(const struct model_shape *s)
{
	return (uint64_t)s->c * s->h * s->w;
}

static inline uint64_t model_shape_bytes(const struct model_shape *s)
{
	switch (s->fmt) {
	case MODEL_FMT_U8:
		return model_shape_elems(s);
	case MODEL_FMT_F32:
		return 4 * model_shape_elems(s);
	case MODEL_FMT_F64:
		return 8 * model_shape_elems(s);
	case MODEL_FMT_BITS:
		return 8 * (uint64_t)s->h * s->w * model_words(s->c);
	}
	return 0;
}
const char *model_fmt_name(uint32_t fmt);
/* The wire format (enum proto_fmt, protocol/proto_hdr.h) that carries a tensor of format fmt. */
unsigned model_fmt_wire(uint32_t fmt);
const char *model_op_name(uint32_t op);
const char *model_src_type_name(uint32_t type);

/*
 * Load and validate a model file (mmap, read-only). Every size, offset and count is checked;
 * on failure returns NULL and writes a message naming the file, the layer and the field to err.
 */
struct model *model_load(const char *path, char *err, size_t errlen);
void model_free(struct model *m);

/*
 * Convert an interchange model (docs/model-format.md) to a model file.
 * Returns 0, or -EINVAL / -errno with a message naming the key, layer or field in err.
 */
int model_convert(const char *arch_json, const char *weights_npz, const char *out_path, char *err,
		  size_t errlen);

/* Number of classes (elements of the last op's output). */
static inline uint32_t model_classes(const struct model *m)
{
	return m->n_layers ? (uint32_t)model_shape_elems(&m->layers[m->n_layers - 1].out) : 0;
}

#endif /* MODEL_MODEL_H */
