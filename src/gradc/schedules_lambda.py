"""Paddle's LambdaDecay and MultiplicativeDecay, whose rate is a Python function of the epoch: given as its lambda
(``LambdaDecay(0.1, lambda epoch: 0.95 ** epoch)``), which is read, never run as Python: arithmetic on the epoch
and numbers, comparisons, ``a if c else b``, and min, max, abs, int, float, round and math's functions."""

from __future__ import annotations

import ast
import math
import operator

from .errors import GradcError
from .schedule_base import Schedule

BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
          ast.Pow: lambda base, exponent: float(base) ** exponent}   # in floats: 10 ** 10 ** 10 overflows at once
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
           ast.NotEq: operator.ne}
FUNCTIONS = {"min": min, "max": max, "abs": abs, "int": int, "float": float,
             "round": lambda number, *digits: round(float(number), *digits),   # an int's round(5, -10 ** 9): hours
             **{f"math.{name}": getattr(math, name) for name in ("cos", "sin", "exp", "log", "sqrt", "floor", "ceil",
                                                                "pow", "tanh")}}
CONSTANTS = {"math.pi": math.pi, "math.e": math.e}
MAX_NESTING = 400   # levels of a spec's syntax tree: EpochFunction recurses once a level, within Python's 1000


def too_deep(tree: ast.AST) -> bool:
    """Whether ``tree`` nests more than MAX_NESTING levels (walked without recursion)."""
    todo = [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        if depth > MAX_NESTING:
            return True
        todo += [(child, depth + 1) for child in ast.iter_child_nodes(node)]
    return False


class EpochFunction:
    """A one-argument lambda of a schedule spec, evaluated on its syntax tree."""

    def __init__(self, tree: ast.Lambda, text: str):
        arguments = tree.args
        if len(arguments.args) != 1 or arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
            raise GradcError(f"a schedule's lambda takes the epoch, one argument: {text}")
        self.argument, self.body, self.text = arguments.args[0].arg, tree.body, text

    def __call__(self, epoch: int) -> float:
        try:
            value = self._value(self.body, epoch)
            if isinstance(value, complex):   # a negative number to a fractional power, which Paddle's float() refuses
                raise ValueError(f"{value} is not a real number")
            return float(value)   # here, so that an integer too large for a float fails in this one line
        except (ArithmeticError, ValueError, TypeError, RecursionError) as exc:
            raise GradcError(f"the schedule's {self.text} at epoch {epoch}: {exc}") from None

    def _value(self, node: ast.expr, epoch: int):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name) and node.id == self.argument:
            return epoch
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
            return BINARY[type(node.op)](self._value(node.left, epoch), self._value(node.right, epoch))
        if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
            return UNARY[type(node.op)](self._value(node.operand, epoch))
        if isinstance(node, ast.Compare) and all(type(op) in COMPARE for op in node.ops):
            left, holds = self._value(node.left, epoch), True
            for op, right_node in zip(node.ops, node.comparators):
                right = self._value(right_node, epoch)
                holds, left = holds and COMPARE[type(op)](left, right), right
            return holds
        if isinstance(node, ast.BoolOp):
            values = [self._value(value, epoch) for value in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.IfExp):
            return self._value(node.body if self._value(node.test, epoch) else node.orelse, epoch)
        if isinstance(node, ast.Call) and not node.keywords and ast.unparse(node.func) in FUNCTIONS:
            return FUNCTIONS[ast.unparse(node.func)](*(self._value(arg, epoch) for arg in node.args))
        if ast.unparse(node) in CONSTANTS:
            return CONSTANTS[ast.unparse(node)]
        raise GradcError(f"a schedule's lambda may use its argument, numbers, arithmetic, comparisons, if-else and "
                         f"{', '.join(sorted(FUNCTIONS))}: not '{ast.unparse(node)}' in {self.text}")

    def __repr__(self) -> str:
        return self.text


def epoch_function(value) -> EpochFunction:
    if not isinstance(value, EpochFunction):
        raise GradcError(f"lr_lambda is a function of the epoch, 'lambda epoch: ...', not {value!r}")
    return value


def finite_rate(rate: float, lr_lambda: EpochFunction, epoch: int) -> float:
    """``rate``, refused where NaN or infinite (every weight NaN at the update), naming the epoch as the lambda's
    own errors do."""
    if not math.isfinite(rate):
        raise GradcError(f"the schedule's {lr_lambda.text} at epoch {epoch}: the learning rate {rate} is not a finite "
                         f"number")
    return rate


class LambdaDecay(Schedule):
    """learning_rate * lr_lambda(epoch)."""

    def __init__(self, learning_rate, lr_lambda):
        self.base, self.lr_lambda = float(learning_rate), epoch_function(lr_lambda)

    def __call__(self, step):
        return finite_rate(self.base * self.lr_lambda(step), self.lr_lambda, step)


class MultiplicativeDecay(Schedule):
    """learning_rate * lr_lambda(1) * ... * lr_lambda(epoch): each epoch's rate the last one's times the lambda."""

    def __init__(self, learning_rate, lr_lambda):
        self.base, self.lr_lambda = float(learning_rate), epoch_function(lr_lambda)
        self.reached = (0, self.base)   # the latest step's rate, which the next step multiplies on

    def __call__(self, step):
        done, rate = self.reached if step >= self.reached[0] else (0, self.base)
        for epoch in range(done + 1, step + 1):
            rate = finite_rate(rate * self.lr_lambda(epoch), self.lr_lambda, epoch)
        self.reached = (step, rate)
        return rate
