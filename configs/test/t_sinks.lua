-- Attention sinks (gpt-oss): a learned logit per query head in every row's softmax, with a causal
-- mask, padding, GQA, the weights and dropout (the sink is in neither), each row's entropy (the sink
-- one more outcome of the row's distribution), small tiles.
return { name = "t_sinks", heads_q = 6, heads_kv = 2, head_dim = 40, causal = true, padding = true,
  sinks = true, weights = true, dropout = true, entropy = true, tile = { q = 24, kv = 32 } }
