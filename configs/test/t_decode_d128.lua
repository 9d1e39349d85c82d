-- Llama-like GQA (4 query heads a kv head) at D = 128 from an f32 cache: the
-- blocked decode kernel asks for its next block inside its score and P*V
-- kernels (D = Dv, 8 cache lines a row); tests/test_kernels.c runs the row
-- counts of each of its classes.
return { name = "t_decode_d128", heads_q = 8, heads_kv = 2, head_dim = 128, causal = true }
