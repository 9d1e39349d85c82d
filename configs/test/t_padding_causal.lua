-- Padding with a causal mask (bottom-right per sequence), GQA.
return { name = "t_padding_causal", heads_q = 6, heads_kv = 3, head_dim = 40, causal = true, padding = true }
