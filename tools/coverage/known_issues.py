"""What the float64 check of Paddle's gradients found, row by row, once explained.

PADDLE_WRONG rows: Paddle 3.3.1's gradient is wrong. Their fixtures also hold the gradient of Paddle's
own float64 forward by central differences (grads_reference.npz), which gradc must match instead.
PADDLE_BY_DESIGN rows: the gradient is not the derivative of the loss on purpose (documented);
gradc follows Paddle there.
LEGACY_CRASHES rows: Paddle 3.3.1's legacy executor kills the process running them (a segfault no Python code can
catch): tools/paddle_coverage.py records the crash as their Paddle error without running them; PIR_CRASHES rows
likewise in PIR mode (tools/paddle_pir_coverage.py).
PIR_FORWARD_NOT_DIFFERENTIABLE rows: their PIR forward program does not hold what their gradient needs, so they
make no PIR fixture (gradc's backward of it is refused; Paddle's own PIR training program still translates).
"""

SPECTRAL_NORM = ("spectral_norm_grad returns G*(1 - u v^T sum(W/sigma))/sigma (elementwise in G), not "
                 "G/sigma - sum(G*W)/sigma^2 u v^T, and ignores that u, v depend on W through the power iterations")

SEND_U_RECV_REPEATED_EDGES = ("graph_send_recv_grad (MAX, MIN) adds dOut once per edge, so a repeated (src, dst) "
                              "edge, whose message is the same row of X, sends it twice")

SET_VALUE_LITERAL = ("in PIR programs the gradient of x[i] = 2.0 (pd_op.set_value_grad, which takes no slice) "
                     "passes dOut through whole, the overwritten slice's too; the legacy set_value_grad zeroes it")

GROUP_NORM_NO_SCALE = ("group_norm_grad without a Scale input leaves out the mean of dY from dX: it gives "
                       "(dY - Y mean(dY Y)) / sigma, not (dY - mean(dY) - Y mean(dY Y)) / sigma, Y normalised")

PADDLE_WRONG = {
    "send_u_recv_max": SEND_U_RECV_REPEATED_EDGES,
    "send_u_recv_min": SEND_U_RECV_REPEATED_EDGES,
    "spectral_norm": SPECTRAL_NORM,
    "spectral_norm_dim1_iters": SPECTRAL_NORM,
    "snn_spectral_norm": SPECTRAL_NORM,
    "group_norm_no_scale": GROUP_NORM_NO_SCALE,
    "group_norm_no_affine": GROUP_NORM_NO_SCALE,
    "snn_group_norm": GROUP_NORM_NO_SCALE,
    "snn_group_norm_nhwc": GROUP_NORM_NO_SCALE,
    "cholesky_solve": "cholesky_solve_grad multiplies by all of Y, not by the triangle of Y the forward reads "
                      "(right only for a Y that is already triangular)",
    "eigvalsh_upper": "eigvalsh_grad is wrong for a batch of matrices (either UPLO; right for a single matrix)",
    "dyn_eigvalsh": "eigvalsh_grad is wrong for a batch of matrices (either UPLO; right for a single matrix)",
    "dyn_eig_values": "the legacy eig_grad is wrong for a batch of matrices (here the second one's, whose eigenvalues "
                      "are real; numpy's eig and central differences agree with gradc)",
    "dyn_eigh": "eigh_grad is wrong for a batch of matrices, declared sizes or not (right for a single matrix)",
    "lu_solve_trans_batched": "lu_solve_grad's gradient of lu is wrong with trans 'T' (that of b is right)",
    "eig_values": "in PIR programs eig_grad gives the real x a complex gradient (its real part is the gradient; the "
                  "legacy eig_grad's is right)",
    "householder_product": SET_VALUE_LITERAL,
    "ormqr": SET_VALUE_LITERAL,
    "setitem_int": SET_VALUE_LITERAL,
    "while_loop_array": "in PIR programs a tensor array that create_array made, and what is read from it, are marked "
                        "stop_gradient though a while loop writes x into it: x gets zeros",
    "incubate_jvp": "in legacy programs the gradient through jvp of sin(a) * a or tanh(a) * a is wrong, up to 0.37 in "
                    "float64 (the jvp of tanh, sin, a * a, a * (2a + 1) or tanh(a) * tanh(a) alone is right, and so is "
                    "Paddle's PIR gradient); gradc's kernels run Paddle's legacy program to the same wrong number, so "
                    "the fault is in how its legacy backward wires the *_grad_grad and *_triple_grad ops",
    "cond_two_outputs": "in PIR programs the gradient through a cond whose branch returns an input as it is (y) loses "
                        "that input's other path through the branch (x * y): y@GRAD holds only the pass-through part",
}

# rows whose PIR training program, as Paddle writes it, computes the wrong gradient (its grad op lacks what the right
# one needs): gradc runs that program to Paddle's numbers, and its own backward to the reference
PIR_PROGRAM_WRONG = {"householder_product", "ormqr", "setitem_int", "cond_two_outputs", "while_loop_array"}

CVM = ("cvm_grad writes the CVM input (each row's show and click counts) as the gradient of X's first two "
       "columns, for the parameter server to accumulate, not their derivative")
USER_BACKWARD = "static_pylayer's gradient is what the user's backward_fn computes (here not forward_fn's derivative)"

CHECK_NUMERICS = "check_numerics has no gradient: its counts and statistics are a report, read as constants"

PADDLE_BY_DESIGN = {
    "check_numerics": CHECK_NUMERICS,
    "continuous_value_model": CVM,
    "continuous_value_model_no_cvm": CVM,
    "detach": "detach stops the gradient: central differences see through it",
    "ctc_loss_sum_norm_by_times": "warpctc's norm_by_times divides the gradient, not the loss, by the sequence length",
    **dict.fromkeys(("embedding_scale_grad_by_freq", "embedding_scale_grad_by_freq_padding"),
                    "scale_grad_by_freq divides each row's gradient by how often its id occurs in the batch"),
    "static_pylayer": USER_BACKWARD,
    "static_pylayer_two_inputs": USER_BACKWARD,
    "Bernoulli_entropy": ("paddle.distribution.Bernoulli's entropy is sigmoid_cross_entropy_with_logits(logit(p), "
                          "Label=p), whose Label Paddle does not differentiate (its grad op has no Label slot): "
                          "p@GRAD keeps only the logit's path, 0 where the derivative is log((1 - p) / p); gradc "
                          "keeps Paddle's slots (its programs' fixtures hold the same)"),
    "corrcoef": ("Paddle's legacy static paddle.diag marks its output stop_gradient, so the program corrcoef builds "
                 "holds its standard deviations constant (gradc honours the program's stop_gradient)"),
}

PIR_PYLAYER = ("a PIR program keeps static_pylayer's backward_fn out of the program (backward_function_id names a "
               "Python callable), so no program text gives the gradient through pd_op.pylayer")

PIR_FORWARD_NOT_DIFFERENTIABLE = {
    "static_pylayer": PIR_PYLAYER,
    "static_pylayer_two_inputs": PIR_PYLAYER,
}

BROADCAST_TENSORS_GRAD_CRASH = ("Segmentation fault in BroadcastTensorsGradKernel<float, CPUContext>: the legacy "
                                "broadcast_tensors_grad crashes when one of its inputs needs no gradient")

LEGACY_CRASHES = {
    "Multinomial_log_prob": BROADCAST_TENSORS_GRAD_CRASH,
    "Binomial_log_prob": BROADCAST_TENSORS_GRAD_CRASH,
    "Binomial_entropy": BROADCAST_TENSORS_GRAD_CRASH,
}

PYRAMID_HASH_CRASH = ("Segmentation fault in CPUPyramidHashOPKernel: PIR values carry no LoD, and the kernel reads "
                      "X's sequence offsets from it")

PIR_CRASHES = {
    "search_pyramid_hash": PYRAMID_HASH_CRASH,
    "search_pyramid_hash_training": PYRAMID_HASH_CRASH,
}
