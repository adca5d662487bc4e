"""gpulint's rules: one rule class per module, in family packages (host_sync/, transfers/, accumulation/, ...).

Nothing here lists them: `gpulint.rule.all_rules()` walks this package and imports every module, which registers
its rule classes. Adding a rule is adding its file.
"""
