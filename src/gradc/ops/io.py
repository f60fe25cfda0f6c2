"""feed / fetch as Paddle writes them in saved inference programs: a holder var (FEED_MINIBATCH or
FETCH_LIST) and a ``col`` attribute naming the position in it."""

from __future__ import annotations

from ..registry import NO_GRAD, defop

defop("feed", ["X"], attrs={"col": 0}, grad=NO_GRAD)
defop("fetch", ["X"], attrs={"col": 0}, grad=NO_GRAD)
