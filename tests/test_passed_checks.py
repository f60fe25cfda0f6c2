"""Checks a program passed are skipped only while it is unchanged (gradc.passed_checks): the verify pass after a load
does not check the structure again, nor the backward after the verify pass the definitions, yet every edit, announced
or an op added unannounced, is checked as before."""

import pytest

import gradc
from fixtures import DATA
from gradc import registry
from gradc.ir import AttrType, OpDesc
from gradc.passes import BackwardPass, Pipeline, VerifyPass
from gradc.passes import verify as verify_pass


def loaded():
    return gradc.load(DATA / "mlp" / "forward.pb")


def refuse(name):
    def refused(*args, **kwargs):
        raise AssertionError(f"{name} ran again on an unchanged program")
    return refused


def test_the_verify_pass_after_a_load_leaves_the_structure_and_the_revision_alone(monkeypatch):
    program = loaded()
    revision = program.revision
    monkeypatch.setattr(verify_pass, "check_structure", refuse("check_structure"))
    VerifyPass()(program)
    assert program.revision == revision


def test_the_backward_after_the_verify_pass_checks_no_definition_again(monkeypatch):
    program = loaded()
    VerifyPass()(program)
    monkeypatch.setattr(registry, "DefinitionChecks", refuse("the definition check"))
    pairs = BackwardPass()(program)
    assert pairs and all(grad == f"{param}@GRAD" for param, grad in pairs)


def test_a_name_broken_after_the_load_is_found_by_the_verify_pass():
    program = loaded()
    program.global_block.ops[2].outputs["Out"] = ["fc_0.tmp_2\n"]
    program.mark_changed()
    with pytest.raises(gradc.ProgramError, match=r"block 0, op 2 \(relu\): slot 'Out' names 'fc_0.tmp_2\\n'"):
        VerifyPass()(program)


def test_an_op_appended_unannounced_is_checked_by_the_verify_pass():
    program = loaded()
    program.global_block.ops.append(OpDesc("relu", {"X": ["fc_0.tmp_2"]}, {"Out": ["bad\tname"]}))
    with pytest.raises(gradc.ProgramError, match=r"op 7 \(relu\): slot 'Out' names 'bad\\tname'"):
        VerifyPass()(program)


def test_a_slot_emptied_after_the_verify_pass_is_found_by_the_backward():
    program = loaded()
    VerifyPass()(program)
    program.global_block.ops[0].inputs["X"] = []
    program.mark_changed()
    with pytest.raises(gradc.ProgramError, match=r"block 0, op 0 \(mul\): the required input slot 'X' is empty"):
        Pipeline([BackwardPass()])(program)


def test_a_copy_of_a_checked_program_is_checked_again():
    program = loaded()
    VerifyPass()(program)
    copy = program.clone()
    copy.global_block.ops[0].inputs["X"] = []   # unannounced, but the copy passed nothing
    with pytest.raises(gradc.ProgramError, match=r"op 0 \(mul\): the required input slot 'X' is empty"):
        gradc.append_backward(copy)


def test_a_block_attribute_set_in_place_after_the_load_is_found_by_the_verify_pass():
    """OpDesc.set_attr edits an op in place: an op knows no program, so the revision stayed and the verify pass
    skipped the structure load had checked (a sub-block index past the program's blocks went through)."""
    program = loaded()
    program.global_block.ops[2].set_attr("sub_block", 5, AttrType.BLOCK)
    with pytest.raises(gradc.ProgramError, match=r"op 2 \(relu\): attribute 'sub_block' names block 5, but the "
                                                 r"program has 1 blocks"):
        VerifyPass()(program)


def test_an_attribute_retyped_in_place_after_the_verify_pass_is_found_by_the_backward():
    program = loaded()
    VerifyPass()(program)
    program.global_block.ops[0].set_attr("x_num_col_dims", "one", AttrType.STRING)
    with pytest.raises(gradc.ProgramError, match=r"op 0 \(mul\): attribute 'x_num_col_dims' is STRING, but op 'mul' "
                                                 r"defines it as INT"):
        gradc.append_backward(program)


def test_a_read_renamed_in_place_after_the_load_is_found_by_the_verify_pass():
    program = loaded()
    program.global_block.ops[2].rename_reads({"fc_0.tmp_1": "fc_0.tmp_1\x00"})
    with pytest.raises(gradc.ProgramError, match=r"op 2 \(relu\): slot 'X' names 'fc_0.tmp_1\\x00'"):
        VerifyPass()(program)
