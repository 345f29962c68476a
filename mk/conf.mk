# conf/: the servers' configuration files (inih, Debian's libinih-dev) turned into their command
# lines, and the option tables (conf/opts.h) of every program; in every program and test.

INIH_CFLAGS := $(call pc_cflags,inih)
INIH_LIBS := $(call pc_libs,inih)
CONF_SRC := $(sort $(wildcard conf/*.c))
CONF_OBJ := $(CONF_SRC:%.c=$(B)/%.o)
LIBCONF := $(B)/libsnconf.a
MODULE_EXT_LIBS += $(INIH_LIBS)

$(CONF_OBJ): MOD_CFLAGS += $(INIH_CFLAGS)

$(LIBCONF): $(CONF_OBJ)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

-include $(CONF_OBJ:.o=.d)

# tests/test_conf reads the servers' own tables (their [server] keys and model sections)
$(B)/tests/test_conf: $(B)/nicfw/nic/opts.o $(B)/host/opts.o
LDFLAGS_test_conf = $(B)/nicfw/nic/opts.o $(B)/host/opts.o $(LIBCONF) $(LIBPROTO) $(INIH_LIBS)
