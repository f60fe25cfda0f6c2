"""The mixed-precision options of `gradc compile` (gradc.passes.amp): --amp O0|O1|O2|OD, --amp-dtype, and the custom
lists, loss scaling and master_grad of paddle.static.amp.decorate under its argument names. They reach the command
as keyword arguments; ``amp_options`` pops them and gives the AmpOptions, or None without --amp."""

from __future__ import annotations

import click

from . import passes as named_passes  # AmpOptions imported when named: its pass brings the optimizers, --amp only
from .errors import GradcError

SCALING = ("init_loss_scaling", "incr_every_n_steps", "decr_every_n_nan_or_inf", "incr_ratio", "decr_ratio",
           "use_dynamic_loss_scaling", "master_grad")
LISTS = ("custom_white_list", "custom_black_list")
OPTIONS = [
    click.option("--amp", "amp_level", type=click.Choice(["O0", "O1", "O2", "OD"], case_sensitive=False),
                 help="Mixed precision as paddle.static.amp.decorate writes it (needs --optimizer): O1 casts around "
                      "the white-list ops (matmul_v2, conv2d, ...) and lets the gray ones follow; OD computes only "
                      "the white-list ops in the low format; O2 puts the parameters and nearly every op in the low "
                      "format, with float32 master weights; O0 lowers the parameters as O2 and casts as O1. Loss "
                      "scaling as decorate's."),
    click.option("--amp-dtype", type=click.Choice(["float16", "bfloat16"]), default="float16", show_default=True,
                 help="With --amp: the low format."),
    click.option("--init-loss-scaling", type=float, metavar="S", help="With --amp: the first loss scale (65536)."),
    click.option("--incr-every-n-steps", type=int, metavar="N",
                 help="With --amp: double the scale after N steps with finite gradients (2000)."),
    click.option("--decr-every-n-nan-or-inf", type=int, metavar="N",
                 help="With --amp: shrink the scale after N steps with an inf or NaN gradient (1)."),
    click.option("--incr-ratio", type=float, metavar="R", help="With --amp: the factor that grows the scale (2)."),
    click.option("--decr-ratio", type=float, metavar="R", help="With --amp: the factor that shrinks it (0.5)."),
    click.option("--custom-white-list", multiple=True, metavar="OP",
                 help="With --amp: an op type to compute in the low format too (decorate's amp_lists="
                      "CustomOpLists(custom_white_list=...)). Repeatable."),
    click.option("--custom-black-list", multiple=True, metavar="OP",
                 help="With --amp: an op type to keep in float32, at every level. Repeatable."),
    click.option("--dynamic-loss-scaling/--static-loss-scaling", "use_dynamic_loss_scaling", default=None,
                 help="With --amp: adjust the scale at each step (float16's default; bfloat16 never does), or keep "
                      "--init-loss-scaling."),
    click.option("--master-grad", "master_grad", is_flag=True, default=None,
                 help="With --amp O2: the optimizer and the unscaling take float32 copies of the low-precision "
                      "gradients (decorate's master_grad=True)."),
]


def _flag(name: str) -> str:
    return "--dynamic-loss-scaling" if name == "use_dynamic_loss_scaling" else "--" + name.replace("_", "-")


def amp_option_decorators(command):
    for option in reversed(OPTIONS):
        command = option(command)
    return command


def amp_options(settings: dict) -> named_passes.AmpOptions | None:
    """Pop the options from the command's keyword arguments; the pass's options (None without --amp)."""
    level, dtype = settings.pop("amp_level"), settings.pop("amp_dtype")
    given = {name: value for name in SCALING if (value := settings.pop(name)) is not None}
    given.update({name: tuple(value) for name in LISTS if (value := settings.pop(name))})
    if level is None:
        if given or dtype != "float16":
            flag = "--amp-dtype" if dtype != "float16" else _flag(next(iter(given)))
            raise click.UsageError(f"{flag}: only with --amp")
        return None
    try:
        return named_passes.AmpOptions(level.upper(), dtype, **given)
    except GradcError as error:   # name the flags: "amp: incr_ratio must be ..." -> "--incr-ratio must be ..."
        message = str(error).removeprefix("amp: ")
        for name in (*SCALING, *LISTS):
            message = message.replace(name, _flag(name))
        raise GradcError(message) from None
