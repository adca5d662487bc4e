"""GPU5xx: advisories, opt-in suggestions whose pay-off depends on the run (how many steps, how big the kernels).

Every rule here is a preview rule of its own family: off by default, and not enabled by `--select GPU4` nor by
`--select GPU`; only a pattern naming them (`--select GPU5`, `--extend-select GPU501`) runs them. Each documents
when it pays and when compile time or graph breaks eat the gain.
"""
