// SPDX-License-Identifier: MIT
/*
 * The one symbol libsncuda.so exports: its table (kcuda.h), in the order of struct kcuda_ops. A
 * member left out or out of order does not compile (-Wmissing-field-initializers, C++20 rules).
 */
#include "kernels/cuda/kcuda_impl.h"

extern "C" __attribute__((visibility("default"))) const struct kcuda_ops kcuda_table = {
    .abi = KCUDA_ABI,
    .size = sizeof(struct kcuda_ops),
    .probe = kcuda_probe,
    .last_error = kcuda_last_error,
    .device_info = kcuda_device_info,
    .model_upload = kcuda_model_upload,
    .model_free = kcuda_model_free,
    .forward_range = kcuda_forward_range,
    .forward = kcuda_forward,
    .bdense = kcuda_bdense,
    .bdense_thr = kcuda_bdense_thr,
    .bdense_u8 = kcuda_bdense_u8,
    .bdense_u8_thr = kcuda_bdense_u8_thr,
    .bconv = kcuda_bconv,
    .bconv_thr = kcuda_bconv_thr,
    .sign_pack = kcuda_sign_pack,
    .threshold_pack = kcuda_threshold_pack,
    .maxpool_bits = kcuda_maxpool_bits,
    .unpack_bits = kcuda_unpack_bits,
    .flatten_bits = kcuda_flatten_bits,
    .cast_f64 = kcuda_cast_f64,
    .conv_f64 = kcuda_conv_f64,
    .dense_f64 = kcuda_dense_f64,
    .bias_f64 = kcuda_bias_f64,
    .batchnorm_f64 = kcuda_batchnorm_f64,
    .relu_f64 = kcuda_relu_f64,
    .maxpool_f64 = kcuda_maxpool_f64,
    .lrn_f64 = kcuda_lrn_f64,
    .conv_f32 = kcuda_conv_f32,
    .dense_f32 = kcuda_dense_f32,
    .bench_bgemm = kcuda_bench_bgemm,
    .bench_sgemm = kcuda_bench_sgemm,
};
