"""The PINNs of docs/tools.md's 'A scientific-ML researcher's week': MLPs u(x, t) built by Paddle 3.3.1 in legacy
static mode, each with its PDE residual written by `paddle.static.gradients` (so the program already holds grad and
grad-of-grad ops): Burgers (tanh, u_t + u u_x - nu u_xx), Poisson in 2-D (sin, -u_xx - u_yy = f), Poisson along x
with the coordinates normalised, (x - mean) / std, inside the net (tanh), and the heat equation's net (silu), with
weighted boundary and initial losses. Per case: pde.pb (the loss program, before minimize), params.npz (the
startup's values), feed.npz (collocation, boundary and initial points), paddle.npz (Paddle's Adam losses at each
step, its first step's parameter gradients, u after the steps); for Burgers also net.pb (u alone), train.pb and
startup.pb (Paddle's training program, its third-derivative ops and all). Paddle's executor fails on Poisson's
training program, its minimize on the normalised one (no maker of elementwise_div_grad_grad), and the heat
equation's u_xx segfaults in Paddle (SiluDoubleCompositeGradOpMaker): those have Paddle's first loss only, heat its
net and u. `paddle.tanh` and `paddle.sin` fail in legacy static mode ("must be Value, but got Variable"), so the
activations are appended as ops.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week12.py tests/data/paddle/user_week12
"""

import json
import os
import sys

import numpy as np
import paddle

RNG = np.random.default_rng(12)
STEPS = 40
NU = 0.01 / np.pi
HEAT = 0.1
WEIGHT_BOUNDARY, WEIGHT_INITIAL = 10.0, 5.0
EXTRA_ATTRS = ("op_callstack", "with_quant_attr", "op_namescope", "op_device", "mkldnn_data_type", "onednn_data_type",
               "use_mkldnn", "use_onednn", "use_quantizer", "use_cudnn", "op_role_var")


def activation(kind, x):
    block = paddle.static.default_main_program().current_block()
    out = block.create_var(name=paddle.utils.unique_name.generate(kind + "_act"), dtype=x.dtype, shape=x.shape)
    block.append_op(type=kind, inputs={"X": [x]}, outputs={"Out": [out]})
    return out


class Net:
    def __init__(self, kind, width=16, normalised=False):
        self.kind = kind
        self.layers = [paddle.nn.Linear(2, width), paddle.nn.Linear(width, width), paddle.nn.Linear(width, 1)]
        self.mean = None
        if normalised:   # (x - mean) / std, the coordinates' statistics frozen
            self.mean = paddle.static.create_parameter([2], "float32", name="coordinates_mean",
                                                       default_initializer=paddle.nn.initializer.Constant(0.5))
            self.mean.stop_gradient = True

    def __call__(self, a, b):
        h = paddle.concat([a, b], axis=1)
        if self.mean is not None:
            h = (h - self.mean) / paddle.full([2], 0.3, "float32")
        for layer in self.layers[:-1]:
            h = activation(self.kind, layer(h))
        return self.layers[-1](h)

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]

    def frozen(self):
        return [] if self.mean is None else [self.mean]


def points(n, low=-1.0, high=1.0):
    return RNG.uniform(low, high, (n, 1)).astype("float32")


def inputs(names):
    made = []
    for name in names:
        var = paddle.static.data(name, [-1, 1], "float32")
        var.stop_gradient = False
        made.append(var)
    return made


def burgers(net):
    x, t, xb, tb, x0, t0 = inputs(["x", "t", "xb", "tb", "x0", "t0"])
    u = net(x, t)
    u_x, u_t = paddle.static.gradients(u, [x, t])
    u_xx, = paddle.static.gradients(u_x, [x])
    residual = u_t + u * u_x - NU * u_xx
    feed = {"x": points(64), "t": points(64, 0, 1), "xb": np.repeat([[-1.0], [1.0]], 8, 0).astype("float32"),
            "tb": points(16, 0, 1), "x0": points(16), "t0": np.zeros((16, 1), "float32")}
    feed["u0"] = -np.sin(np.pi * feed["x0"]).astype("float32")
    u0 = paddle.static.data("u0", [-1, 1], "float32")
    loss = (paddle.mean(residual * residual) + WEIGHT_BOUNDARY * paddle.mean(paddle.square(net(xb, tb)))
            + WEIGHT_INITIAL * paddle.mean(paddle.square(net(x0, t0) - u0)))
    return x, t, u, loss, feed


def poisson(net):
    x, y, xb, yb = inputs(["x", "t", "xb", "tb"])
    u = net(x, y)
    u_x, u_y = paddle.static.gradients(u, [x, y])
    u_xx, = paddle.static.gradients(u_x, [x])
    u_yy, = paddle.static.gradients(u_y, [y])
    f = paddle.static.data("f", [-1, 1], "float32")
    residual = u_xx + u_yy + f
    side = points(16, 0, 1)
    feed = {"x": points(64, 0, 1), "t": points(64, 0, 1),
            "xb": np.concatenate([np.zeros((8, 1)), np.ones((8, 1)), side[:8], side[8:]]).astype("float32"),
            "tb": np.concatenate([side[:8], side[8:], np.zeros((8, 1)), np.ones((8, 1))]).astype("float32")}
    feed["f"] = (2 * np.pi ** 2 * np.sin(np.pi * feed["x"]) * np.sin(np.pi * feed["t"])).astype("float32")
    loss = paddle.mean(residual * residual) + WEIGHT_BOUNDARY * paddle.mean(paddle.square(net(xb, yb)))
    return x, y, u, loss, feed


def poisson_in_x(net):
    """u_xx + f = 0 along x at each t, the boundary u = 0 at x = 0 and 1."""
    x, t, xb, tb = inputs(["x", "t", "xb", "tb"])
    u = net(x, t)
    u_xx, = paddle.static.gradients(paddle.static.gradients(u, [x])[0], [x])
    f = paddle.static.data("f", [-1, 1], "float32")
    residual = u_xx + f
    feed = {"x": points(32, 0, 1), "t": points(32, 0, 1), "xb": np.repeat([[0.0], [1.0]], 4, 0).astype("float32"),
            "tb": points(8, 0, 1)}
    feed["f"] = (np.pi ** 2 * np.sin(np.pi * feed["x"])).astype("float32")
    loss = paddle.mean(residual * residual) + WEIGHT_BOUNDARY * paddle.mean(paddle.square(net(xb, tb)))
    return x, t, u, loss, feed


def heat_feed():
    feed = {"x": points(64, 0, 1), "t": points(64, 0, 1), "xb": np.repeat([[0.0], [1.0]], 8, 0).astype("float32"),
            "tb": points(16, 0, 1), "x0": points(16, 0, 1), "t0": np.zeros((16, 1), "float32")}
    feed["u0"] = np.sin(np.pi * feed["x0"]).astype("float32")
    return feed


# Poisson along x with the coordinates normalised: Paddle's minimize fails (no maker of elementwise_div_grad_grad)
CASES = {"burgers": (burgers, "tanh", False), "poisson": (poisson, "sin", False), "heat": (None, "silu", False),
         "normalised": (poisson_in_x, "tanh", True)}


def build(name, out):
    os.makedirs(f"{out}/{name}", exist_ok=True)
    equation, kind, normalised = CASES[name]
    paddle.enable_static()
    paddle.utils.unique_name.switch()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        paddle.seed(12)
        net = Net(kind, normalised=normalised)
        names = [p.name for p in net.parameters()]
        if equation is None:   # silu: u_xx by static.gradients segfaults in SiluDoubleCompositeGradOpMaker
            net(*inputs(["x", "t"]))
            return heat_only(name, out, names, startup)
        x, t, u, loss, feed = equation(net)
        forward = main.clone()
        try:
            _, pairs = paddle.optimizer.Adam(learning_rate=1e-3).minimize(loss)   # grads named grad/grad/grad/w@GRAD
        except RuntimeError as exc:
            print(name, "Paddle cannot minimize it:", str(exc).splitlines()[0])
            pairs = []
    alone = paddle.static.Program()
    with paddle.static.program_guard(alone, paddle.static.Program()), paddle.utils.unique_name.guard():
        alone_u = Net(kind, normalised=normalised)(*(paddle.static.data(n, [-1, 1], "float32") for n in ("x", "t")))
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    scope = paddle.static.global_scope()
    params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in net.parameters() + net.frozen()}
    losses, first, u_out = [], {}, np.zeros(0)
    try:
        for _ in range(STEPS if pairs else 0):
            fetched = executor.run(main, feed=feed, fetch_list=[loss] + [g for _, g in pairs])
            losses.append(float(fetched[0]))
            first = first or {f"grad/{p.name}": g for (p, _), g in zip(pairs, fetched[1:])}
        u_out, = executor.run(alone, feed={"x": feed["x"], "t": feed["t"]}, fetch_list=[alone_u])
    except RuntimeError as exc:   # Poisson's sin: Paddle's legacy third-order backward fails
        print(name, "Paddle cannot train it:", str(exc).splitlines()[0])
    if not losses:
        losses = executor.run(forward, feed=feed, fetch_list=[loss.name])
    for program in (forward, alone, main, startup):   # call stacks (most of the bytes) and extras no CPU kernel reads
        for op in program.global_block().ops:
            for extra in EXTRA_ATTRS:
                op.desc.remove_attr(extra)
    with open(f"{out}/{name}/pde.pb", "wb") as handle:
        handle.write(forward.desc.serialize_to_string())
    if name == "burgers":   # u alone, and Paddle's own training program (its backward writes third-derivative ops)
        with open(f"{out}/{name}/net.pb", "wb") as handle:
            handle.write(alone.desc.serialize_to_string())
        with open(f"{out}/{name}/train.pb", "wb") as handle:
            handle.write(main.desc.serialize_to_string())
        with open(f"{out}/{name}/startup.pb", "wb") as handle:
            handle.write(startup.desc.serialize_to_string())
    np.savez(f"{out}/{name}/params.npz", **params)
    np.savez(f"{out}/{name}/feed.npz", **feed)
    np.savez(f"{out}/{name}/paddle.npz", losses=np.array(losses), u_trained=u_out, **first)
    paddle.disable_static()
    return {"loss": loss.name, "u": u.name, "net_out": alone_u.name, "params": names, "activation": kind}


def heat_only(name, out, names, startup):
    """The heat equation's net alone (gradc builds its derivatives), Paddle's u at the collocation points."""
    alone = paddle.static.default_main_program()
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    feed = heat_feed()
    scope = paddle.static.global_scope()
    params = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
    u_name = alone.global_block().ops[-1].output_arg_names[0]
    u_out, = executor.run(alone, feed={"x": feed["x"], "t": feed["t"]}, fetch_list=[u_name])
    for op in alone.global_block().ops:
        op.desc.remove_attr("op_callstack")
    with open(f"{out}/{name}/net.pb", "wb") as handle:
        handle.write(alone.desc.serialize_to_string())
    np.savez(f"{out}/{name}/params.npz", **params)
    np.savez(f"{out}/{name}/feed.npz", **feed)
    np.savez(f"{out}/{name}/paddle.npz", u_initial=u_out)
    paddle.disable_static()
    return {"net_out": u_name, "params": names, "activation": "silu"}


if __name__ == "__main__":
    json.dump({name: build(name, sys.argv[1]) for name in CASES}, open(f"{sys.argv[1]}/meta.json", "w"), indent=1)
