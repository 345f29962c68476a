# lib/: libsplitnic (in-process inference, include/splitnic/splitnic.h) and client/:
# libsplitnic-client (front-end over UDP, include/splitnic/client.h). In the tree the programs link
# their objects through $(B)/libsnapi.a and $(B)/libsnclient.a; the installable libraries are
# built from position-independent copies of their objects and of the modules beneath them
# (build/pic/), only the splitnic_* symbols exported (lib/*.map), with a versioned soname.
#
#   make B=... $(B)/lib/libsplitnic.so $(B)/lib/libsplitnic-client.so   (also built by `make all`)

BASE_CFLAGS += -Iinclude

SNAPI_SRC := $(sort $(wildcard lib/*.c))
SNAPI_OBJ := $(SNAPI_SRC:%.c=$(B)/%.o)
LIBSNAPI := $(B)/libsnapi.a
SNCLIENT_SRC := $(sort $(wildcard client/*.c))
SNCLIENT_OBJ := $(SNCLIENT_SRC:%.c=$(B)/%.o)
LIBSNCLIENT := $(B)/libsnclient.a

$(LIBSNAPI): $(SNAPI_OBJ)
$(LIBSNCLIENT): $(SNCLIENT_OBJ)
$(LIBSNAPI) $(LIBSNCLIENT):
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

SN_SOVERSION := 1
SN_VERSION := 1.0.0
SN_LIBDIR := $(B)/lib
# libsplitnic: the API, the kernels and what loading a model file needs; not the converter
# (jansson, libzip), the executors, nor the protocol
PIC_SN_OBJ := $(patsubst %.c,$(B)/pic/%.o,$(SNAPI_SRC) $(KERN_SRC) $(MODEL_SRC))
PIC_CLIENT_OBJ := $(patsubst %.c,$(B)/pic/%.o,$(SNCLIENT_SRC) lib/error.c $(PROTO_SRC))
SN_EXT_LIBS := $(BLAS_LIBS) -pthread -lm
SN_LIBS := $(SN_LIBDIR)/libsplitnic.so.$(SN_VERSION) $(SN_LIBDIR)/libsplitnic.a \
	$(SN_LIBDIR)/libsplitnic-client.so.$(SN_VERSION) $(SN_LIBDIR)/libsplitnic-client.a

$(B)/pic/%.o: %.c
	$(call say,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(MOD_CFLAGS) $(call isa_flags,$<) -fPIC $(DEPFLAGS) -c $< -o $@

$(SN_LIBDIR)/libsplitnic.so.$(SN_VERSION): $(PIC_SN_OBJ) lib/libsplitnic.map
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libsplitnic.so.$(SN_SOVERSION) -Wl,--no-undefined \
		-Wl,--version-script=lib/libsplitnic.map -o $@ $(PIC_SN_OBJ) $(SN_EXT_LIBS)
	$(Q)ln -sf $(@F) $(@D)/libsplitnic.so.$(SN_SOVERSION) && ln -sf $(@F) $(@D)/libsplitnic.so

$(SN_LIBDIR)/libsplitnic-client.so.$(SN_VERSION): $(PIC_CLIENT_OBJ) client/libsplitnic-client.map
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libsplitnic-client.so.$(SN_SOVERSION) -Wl,--no-undefined \
		-Wl,--version-script=client/libsplitnic-client.map -o $@ $(PIC_CLIENT_OBJ) -lm
	$(Q)ln -sf $(@F) $(@D)/libsplitnic-client.so.$(SN_SOVERSION) && \
		ln -sf $(@F) $(@D)/libsplitnic-client.so

$(SN_LIBDIR)/libsplitnic.a: $(PIC_SN_OBJ)
$(SN_LIBDIR)/libsplitnic-client.a: $(PIC_CLIENT_OBJ)
$(SN_LIBDIR)/libsplitnic.a $(SN_LIBDIR)/libsplitnic-client.a:
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

all: $(SN_LIBS)

.SECONDARY: $(PIC_SN_OBJ) $(PIC_CLIENT_OBJ)
-include $(SNAPI_OBJ:.o=.d) $(SNCLIENT_OBJ:.o=.d) $(PIC_SN_OBJ:.o=.d) $(PIC_CLIENT_OBJ:.o=.d)
