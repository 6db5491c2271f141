# A tool's object keeps its keys in the tool's order: zeta before alpha.
cfg = await get_config(section="server")
print(list(cfg))
print(cfg)
cfg
