# Bundled models: models/NAME/{arch.json,weights.npz} -> build/models/NAME.snm
MODEL_NAMES := $(notdir $(patsubst %/arch.json,%,$(wildcard models/*/arch.json)))
MODEL_FILES := $(MODEL_NAMES:%=$(B)/models/%.snm)

$(B)/models/%.snm: models/%/arch.json models/%/weights.npz $(SPLITNIC)
	$(call say,CONVERT,$@)
	@mkdir -p $(@D)
	$(Q)$(SPLITNIC) convert models/$*/arch.json models/$*/weights.npz -o $@

models: $(MODEL_FILES)
all: $(MODEL_FILES)
demo-run: $(MODEL_FILES)
