"""Paddle runs gradc's compiled programs: `export` (gradc's side) compiles every fixture into one common case
layout, `paddle_side` (Paddle's side) runs the cases in Paddle's executor. tools/run_in_paddle.py drives both."""
