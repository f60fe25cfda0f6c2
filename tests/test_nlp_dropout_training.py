"""PaddleNLP's BERT, ERNIE, RoBERTa and ELECTRA (masked LM), GPT (causal LM), T5 and BART (conditional generation)
trained in Paddle's legacy static mode with hidden and attention dropout 0.1 and AdamW (tests/data/paddle/nlp_dropout,
tools/paddlenlp_static.py): gradc runs Paddle's startup program seeded as paddle.seed seeded Paddle, which gives
Paddle's parameters exactly (ERNIE's are truncated normals; RoBERTa's, ELECTRA's and T5's normals their
`_init_weights` draws, moved to the startup by the tool); then gradc's own compile of the forward program with AdamW
draws Paddle's dropout masks and gives Paddle's losses, first-step gradients and final parameters."""

from pathlib import Path

import numpy as np
import pytest

from vision_training import Fixture, compare, train

DATA = Path(__file__).parent / "data" / "paddle" / "nlp_dropout"
MODELS = sorted(d.name for d in DATA.iterdir() if (d / "meta.json").exists())


def test_the_fixtures_train_with_dropout_on():
    assert MODELS == ["BartForConditionalGeneration", "BertForMaskedLM", "ElectraForMaskedLM", "ErnieForMaskedLM",
                      "GPTForCausalLM", "RobertaForMaskedLM", "T5ForConditionalGeneration"]
    for name in MODELS:
        meta = Fixture(name, DATA).meta
        assert meta["dropout"] == 0.1 and meta["dropout_ops"] > 0 and meta["optimizer"] == "adamw"


@pytest.mark.parametrize("name", MODELS)
def test_training_with_dropout_matches_paddle(name):
    fixture = Fixture(name, DATA)
    trained = train(fixture)
    for param, value in fixture.npz("init").items():   # Paddle's startup, run by gradc: the same draws
        np.testing.assert_array_equal(trained.init[param], value, err_msg=param)
    differ = compare(fixture, trained)
    assert not differ, f"{name}: differs from Paddle's training in {differ}"


def test_a_mask_drawn_elsewhere_is_noticed(monkeypatch):
    """Paddle's initial parameters, but the dropout masks of an engine not seeded as Paddle's: the steps differ."""
    monkeypatch.setattr(Fixture, "has_dropout", False)
    differ = compare(Fixture("BertForMaskedLM", DATA), train(Fixture("BertForMaskedLM", DATA)))
    assert "losses" in differ
