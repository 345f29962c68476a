# model/onnx/: the ONNX / QONNX importer (`splitnic import`), depending on model/ only. onnx.proto
# comes from Debian's libonnx-dev and is compiled with protoc-c into $(B)/model/onnx/gen/ at
# build time.
#
#   make B=... $(B)/libsnonnx.a      (linked into the splitnic CLI and the tests)

ONNX_PROTO ?= /usr/include/onnx/onnx.proto
PROTOC_C ?= protoc-c
ONNX_GEN_DIR := $(B)/model/onnx/gen
ONNX_PB_C := $(ONNX_GEN_DIR)/onnx.pb-c.c
ONNX_PB_H := $(ONNX_GEN_DIR)/onnx.pb-c.h
ONNX_SRC := $(sort $(wildcard model/onnx/*.c))
ONNX_OBJ := $(ONNX_SRC:%.c=$(B)/%.o) $(ONNX_GEN_DIR)/onnx.pb-c.o
LIBONNX := $(B)/libsnonnx.a
PROTOBUF_C_CFLAGS := $(call pc_cflags,libprotobuf-c)
PROTOBUF_C_LIBS := $(or $(call pc_libs,libprotobuf-c),-lprotobuf-c)

$(ONNX_PB_C) $(ONNX_PB_H) &: $(ONNX_PROTO)
	$(call say,PROTOC,$@)
	@mkdir -p $(ONNX_GEN_DIR)
	$(Q)$(PROTOC_C) --proto_path=$(dir $(ONNX_PROTO)) --c_out=$(ONNX_GEN_DIR) $(ONNX_PROTO)

$(ONNX_GEN_DIR)/onnx.pb-c.o: $(ONNX_PB_C)
	$(call say,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(PROTOBUF_C_CFLAGS) -I$(ONNX_GEN_DIR) $(DEPFLAGS) -c $< -o $@

$(ONNX_SRC:%.c=$(B)/%.o): $(ONNX_PB_H)
$(ONNX_SRC:%.c=$(B)/%.o): MOD_CFLAGS += $(PROTOBUF_C_CFLAGS) -I$(ONNX_GEN_DIR)

$(LIBONNX): $(ONNX_OBJ)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

MODULE_EXT_LIBS += $(PROTOBUF_C_LIBS)

-include $(ONNX_OBJ:.o=.d)

# libFuzzer target for the importer (built and run by `make fuzz`, see mk/fuzz.mk): the
# importer, the compiler and the model-file validator, with ASan + UBSan.
FUZZ_TARGETS += fuzz_onnx
ONNX_FUZZ_KERN := $(wildcard model/compile*.c) model/model.c model/model_write.c model/crc32c.c

$(B)/fuzz/fuzz_onnx: tests/fuzz/fuzz_onnx.c $(ONNX_SRC) $(ONNX_PB_C) $(ONNX_FUZZ_KERN) \
		$(wildcard model/onnx/*.h model/*.h)
	$(call say,FUZZCC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(PROTOBUF_C_CFLAGS) -I$(ONNX_GEN_DIR) -o $@ $< $(ONNX_SRC) \
		$(ONNX_PB_C) $(ONNX_FUZZ_KERN) $(PROTOBUF_C_LIBS) -lm

# tests/test_onnx.c builds ONNX models with the generated protobuf-c code
$(B)/tests/test_onnx.o: $(ONNX_PB_H)
$(B)/tests/test_onnx.o: MOD_CFLAGS += $(PROTOBUF_C_CFLAGS) -I$(ONNX_GEN_DIR)
