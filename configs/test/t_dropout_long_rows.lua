-- Dropout (dropout = true) on rows longer than one Philox draw of the AVX-512 variant (128 keys): a causal
-- sliding window in wide key tiles, so that rows start mid-tile and end on every offset.
return { name = "t_dropout_long_rows", heads_q = 2, heads_kv = 1, head_dim = 32, causal = true,
  window = { left = 200 }, tile = { q = 32, kv = 256 }, dropout = true }
