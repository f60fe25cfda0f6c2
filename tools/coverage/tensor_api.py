"""Rows: PIR rows' witnesses: tensor-API functions whose legacy ops gradc has but whose PIR ops it did not map."""

from .spec import table

ROWS = table(
    "tensor_api",
)
