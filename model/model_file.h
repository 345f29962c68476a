/* SPDX-License-Identifier: MIT */
/*
 * model/model_file.h — the splitnic model file ("*.snm"), byte by byte.
 *
 * Every integer is little-endian, every real an IEEE-754 binary64 (little-endian). The file is
 * mapped read-only by model_load; blobs are used in place, so each starts at a 64-byte
 * aligned file offset. Order in the file: header, source-layer table, op table, blobs.
 *
 * Header, 128 bytes at offset 0:
 *
 *    0  u8[8] magic            "SNICMDL\0"
 *    8  u32   version          2 (2 added MODEL_LF_ANDPOOL; convert a version 1 file again)
 *   12  u32   header_size      128
 *   16  u64   file_size        the file's size in bytes
 *   24  u32   crc32c           CRC32C (model/crc32c.h) of the whole file with these 4 bytes
 *                              taken as zero
 *   28  u32   flags            0
 *   32  u32   n_src            source layers (arch.json layers), 1..MODEL_FILE_MAX_SRC
 *   36  u32   n_ops            compiled ops, 1..MODEL_FILE_MAX_OPS
 *   40  u64   src_offset       source-layer table, >= header_size, 8-aligned
 *   48  u64   op_offset        op table, 64-aligned, after the source-layer table
 *   56  u32   in_fmt           model input format: MODEL_FMT_U8 or MODEL_FMT_F32
 *   60  u32   in_c
 *   64  u32   in_h
 *   68  u32   in_w
 *   72  char  name[56]         NUL-terminated
 *
 * Source-layer table: n_src records of 32 bytes (struct model_src_layer), the arch.json layers
 * in order, for inspection and analysis:
 *
 *    0  u32   type             enum model_src_type
 *    4  u32   flags            MODEL_SF_BIAS, MODEL_SF_BINW (dense and conv only)
 *    8  u32   c, h, w          output shape; a flat vector is (n,1,1)
 *   20  u32   kernel           conv, maxpool: the window; lrn: size; else 0
 *   24  u32   stride           conv, maxpool; else 0
 *   28  u32   pad              conv; else 0
 *
 * Op table: n_ops records of 128 bytes, the ops executed in order (see model.h for each op's
 * semantics and blob layouts):
 *
 *    0  u16   op               enum model_op
 *    2  u16   flags            MODEL_LF_*
 *    4  u16   src_first        the source layers this op implements:
 *    6  u16   src_count          [src_first, src_first + src_count) within n_src
 *    8  u32   in_fmt, in_c, in_h, in_w
 *   24  u32   out_fmt, out_c, out_h, out_w
 *   40  u32   kernel           conv, bconv, maxpool, maxpool_bits; else 0
 *   44  u32   stride           as kernel
 *   48  u32   pad              conv, bconv; else 0
 *   52  u32   lrn_size         lrn (odd); else 0
 *   56  f64   lrn_alpha        lrn; else 0
 *   64  f64   lrn_beta
 *   72  f64   lrn_k
 *   80  {u64 offset, u64 size} blob[3]   offset 64-aligned, after the op table, inside the
 *                              file; size exactly as model.h's layout for the op's shapes and
 *                              flags; an unused blob is {0, 0}
 *
 * Blob contents: packed weight words are u64 with bit j of word k for element 64k + j, bit 1
 * where W >= 0 (+0.0 and -0.0 give +1), the unused high bits of a row's (or tap's) last word 0;
 * thresholds are i32, flips u8 (0 or 1), and-pool masks u64 (tail bits 0), everything else f64.
 * Bytes between blobs are 0.
 *
 * model_load checks all of it: sizes, magic, version, header_size, crc, flags, counts
 * (bounded by MODEL_FILE_MAX_*), tables inside the file and aligned, every op known with formats,
 * flags and unused fields valid for it, chaining (op 0's input is the model input, op i's input
 * is op i-1's output), output shapes (conv/pool formulas, flatten, dense), every blob's
 * alignment, bounds and exact size, packed-weight tail bits 0, flips 0/1, batch-norm sd > 0 and
 * every f64 parameter finite.
 */
#ifndef MODEL_MODEL_FILE_H
#define MODEL_MODEL_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the model file is mapped in place");

#define MODEL_FILE_MAGIC       "SNICMDL"
#define MODEL_FILE_VERSION     2
#define MODEL_FILE_HEADER_SIZE 128
#define MODEL_FILE_SRC_SIZE    32
#define MODEL_FILE_OP_SIZE     128
#define MODEL_FILE_ALIGN       64
#define MODEL_FILE_MAX_SRC     4096
#define MODEL_FILE_MAX_OPS     4096
#define MODEL_FILE_MAX_ELEMS   (1ull << 28) /* elements of any tensor, per image */

struct model_file_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint64_t file_size;
	uint32_t crc32c;
	uint32_t flags;
	uint32_t n_src;
	uint32_t n_ops;
	uint64_t src_offset;
	uint64_t op_offset;
	uint32_t in_fmt, in_c, in_h, in_w;
	char name[MODEL_NAME_MAX];
};

struct model_file_blob {
	uint64_t offset;
	uint64_t size;
};

struct model_file_op {
	uint16_t op;
	uint16_t flags;
	uint16_t src_first;
	uint16_t src_count;
	uint32_t in_fmt, in_c, in_h, in_w;
	uint32_t out_fmt, out_c, out_h, out_w;
	uint32_t kernel, stride, pad, lrn_size;
	double lrn_alpha, lrn_beta, lrn_k;
	struct model_file_blob blob[MODEL_NBLOB];
};

_Static_assert(sizeof(struct model_file_header) == MODEL_FILE_HEADER_SIZE, "header layout");
_Static_assert(offsetof(struct model_file_header, crc32c) == 24, "header layout");
_Static_assert(offsetof(struct model_file_header, in_fmt) == 56, "header layout");
_Static_assert(offsetof(struct model_file_header, name) == 72, "header layout");
_Static_assert(sizeof(struct model_src_layer) == MODEL_FILE_SRC_SIZE, "source record layout");
_Static_assert(sizeof(struct model_file_op) == MODEL_FILE_OP_SIZE, "op record layout");
_Static_assert(offsetof(struct model_file_op, kernel) == 40, "op record layout");
_Static_assert(offsetof(struct model_file_op, lrn_alpha) == 56, "op record layout");
_Static_assert(offsetof(struct model_file_op, blob) == 80, "op record layout");

/*
 * Serialize a model to a new malloc'd buffer (*buf, *size). Each layer's blob[i] points to
 * blob_size[i] bytes (NULL/0 if unused); wexp is ignored; src_first/src_count, in/out and the
 * parameters are written as given (validated only when loaded). Returns 0, -EINVAL (a count or
 * size that does not fit the format) or -ENOMEM.
 */
int model_serialize(const struct model *m, void **buf, size_t *size);

/* Serialize and write to path (created or truncated). Returns 0 or -errno, message in err. */
int model_write(const struct model *m, const char *path, char *err, size_t errlen);

/*
 * Validate a model held in memory (buf 64-byte aligned, kept alive and unchanged until
 * model_free); `label` names it in messages. The model's map is NULL (not owned).
 */
struct model *model_from_buffer(const void *buf, size_t size, const char *label, char *err,
				size_t errlen);

/* Expected size of blob `i` of a layer for its op, flags and shapes (0: must be unused). */
uint64_t model_layer_blob_size(const struct model_layer *l, unsigned int i);

#endif /* MODEL_MODEL_FILE_H */
