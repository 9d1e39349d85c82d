-- matmul = "int8" on a q4_0 cache: bf16 Q quantized to q8_0 blocks, Q.K as
-- integer dots against the nibbles; MQA, padding (ragged key lengths), causal
-- (at Lq = 1 every key seen: the streaming path's block step, lib/decode_qblock,
-- with softcap), and D != Dv (96 and 32: three and one blocks a row).
-- The reference computes on the same quantized Q.
return {
  name = "t_q4_0_int8",
  heads_q = 4,
  heads_kv = 1,
  head_dim = 96,
  head_dim_v = 32,
  padding = true,
  causal = true,
  softcap = 30,
  dtype = { q = "bf16", kv = "q4_0" },
  matmul = "int8",
}
