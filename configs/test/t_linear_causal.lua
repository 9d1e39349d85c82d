-- Linear attention, causal (the chunked algorithm): MQA, padding, tiles
-- smaller than the test lengths so that chunks, partial diagonal blocks and
-- several packing blocks occur.
return {
  name = "t_linear_causal",
  kind = "linear",
  heads_q = 4,
  heads_kv = 1,
  head_dim = 64,
  causal = true,
  padding = true,
  tile = { q = 24, kv = 32 },
}
