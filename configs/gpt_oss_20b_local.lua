-- gpt-oss-20b sliding-window layers (the even ones, 12 of 24): 64 query heads, 8 KV heads (GQA), head
-- dim 64, causal, a 128-key sliding window, a learned sink logit per query head (args->sinks); RoPE
-- with YaRN scaling, whose angles the kernel does not compute: the caller's cos / sin table.
-- From `attngen import-hf` of its config.json (tests/hf/gpt_oss_20b.json).
return {
  name = "gpt_oss_20b_local",
  heads_q = 64,
  heads_kv = 8,
  head_dim = 64,
  causal = true,
  sliding_window = 128, -- keys including the current one: window.left = 127
  sinks = true,
  rope = { style = "neox", table = true }, -- cos, sin at each position: args->rope_cos, rope_sin
}
