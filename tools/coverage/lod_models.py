"""Rows: Paddle 1.x/2.x text models over LoD tensors: the dynamic LSTM and GRU, gru_unit, CRF decoding, chunk
evaluation, edit distance and beam search (the ops appended as those versions' layers did)."""

ROWS = []
