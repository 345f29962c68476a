# conf/: the servers' configuration files (inih, Debian's libinih-dev) turned into their command
# lines; linked into splitnic-nic and splitnic-host (and tests/test_conf).

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
