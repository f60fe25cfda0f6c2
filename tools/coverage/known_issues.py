"""What the float64 check of Paddle's gradients found, row by row, once explained.

PADDLE_WRONG rows: Paddle 3.3.1's gradient is wrong. Their fixtures also hold the gradient of Paddle's
own float64 forward by central differences (grads_reference.npz), which gradc must match instead.
PADDLE_BY_DESIGN rows: the gradient is not the derivative of the loss on purpose (documented);
gradc follows Paddle there.
"""

SPECTRAL_NORM = ("spectral_norm_grad returns G*(1 - u v^T sum(W/sigma))/sigma (elementwise in G), not "
                 "G/sigma - sum(G*W)/sigma^2 u v^T, and ignores that u, v depend on W through the power iterations")

PADDLE_WRONG = {
    "spectral_norm": SPECTRAL_NORM,
    "spectral_norm_dim1_iters": SPECTRAL_NORM,
    "cholesky_solve": "cholesky_solve_grad multiplies by all of Y, not by the triangle of Y the forward reads "
                      "(right only for a Y that is already triangular)",
}

CVM = ("cvm_grad writes the CVM input (each row's show and click counts) as the gradient of X's first two "
       "columns, for the parameter server to accumulate, not their derivative")

PADDLE_BY_DESIGN = {
    "continuous_value_model": CVM,
    "continuous_value_model_no_cvm": CVM,
    "ctc_loss_sum_norm_by_times": "warpctc's norm_by_times divides the gradient, not the loss, by the sequence length",
}
