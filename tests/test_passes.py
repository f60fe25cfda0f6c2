"""Pass infrastructure: user passes, pipelines, pre- and postconditions."""

import pytest
from click.testing import CliRunner

import gradc
from fixtures import DATA
from gradc.cli import cli
from gradc.passes import PASSES, BackwardPass, Pass, PassConditionError, Pipeline, VerifyPass, register_pass


@pytest.fixture
def count_ops_pass():
    @register_pass
    class CountOps(Pass):
        name = "count-ops"

        def apply(self, program):
            return program.num_ops()

    yield CountOps
    PASSES.pop("count-ops")


def test_user_pass_in_a_pipeline(count_ops_pass):
    program = gradc.load(DATA / "mlp" / "forward.pb")
    results = Pipeline([VerifyPass(), BackwardPass(), count_ops_pass()])(program)
    assert results["count-ops"] == 15 and len(results["backward"]) == 4


def test_user_pass_from_the_cli(count_ops_pass, tmp_path):
    result = CliRunner().invoke(cli, ["compile", str(DATA / "mlp" / "forward.pb"), "-o", str(tmp_path / "t.pb"),
                                      "--pass", "count-ops"])
    assert result.exit_code == 0, result.output
    assert "count-ops: 15" in result.output


def test_backward_requires_a_forward_program():
    program = gradc.load(DATA / "mlp" / "backward.pb")
    with pytest.raises(PassConditionError, match="already has backward ops"):
        BackwardPass()(program)


def test_a_broken_pass_is_caught_by_its_postcondition():
    class DropsTheSeed(BackwardPass):
        def apply(self, program):
            pairs = super().apply(program)
            program.global_block.ops = [op for op in program.global_block.ops if op.attrs.get("op_role") != 257]
            return pairs

    program = gradc.load(DATA / "mlp" / "forward.pb")
    with pytest.raises(PassConditionError, match=r"reads 'mean_0.tmp_0@GRAD' before any op writes it"):
        DropsTheSeed()(program)


def test_unknown_pass_is_a_clear_error():
    with pytest.raises(gradc.GradcError, match="unknown pass 'nope'"):
        gradc.passes.make_pass("nope")


def test_verify_reports_shape_mismatch_with_location():
    program = gradc.load(DATA / "mlp" / "forward.pb")
    program.global_block.var("fc_0.w_0").shape = [17, 32]
    with pytest.raises(gradc.ProgramError, match=r"block 0, op 0 \(mul\).*16\] but Y to \[17"):
        VerifyPass()(program)


def test_float64_pass_widens_vars_and_dtype_attributes():
    from gradc.passes import Float64Pass

    program = gradc.load(DATA / "mlp" / "forward.pb")
    gradc.append_backward(program)
    assert Float64Pass()(program) > 0
    block = program.global_block
    assert block.var("fc_0.w_0").dtype == gradc.VarType.FP64 and block.var("label").dtype == gradc.VarType.INT64
    seed = next(op for op in block.ops if op.attrs.get("op_role") == 257)
    assert seed.attrs["dtype"] == gradc.VarType.FP64
