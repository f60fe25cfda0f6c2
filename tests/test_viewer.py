"""gradc view in a real headless browser (Debian's chromium driven by Playwright): each fixture's page loads
without script errors, a click on an op opens its panel, a grad op names its forward op, sub-blocks
collapse, search finds ops and vars, value statistics match the run, and the 9,000-op deep MLP pans and
zooms. Screenshots go to $GRADC_SCREENSHOTS (default: the test's tmp dir)."""

import importlib.util
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.layers import ProgramBuilder
from gradc.pairing import BACKWARD, op_kinds, pair_grad_ops
from gradc.viz.dot import program_dot
from gradc.viz.html import program_html
from gradc.viz.stats import value_stats

# found, not imported: Playwright's import costs every xdist worker a quarter second at collection; the browser
# fixture imports it in the one worker that runs these tests
if importlib.util.find_spec("playwright") is None:
    pytest.skip("playwright is not installed (pip install -e '.[dev]')", allow_module_level=True)
CHROMIUM = os.environ.get("GRADC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip("no chromium browser (Debian: apt-get install chromium; or set GRADC_CHROMIUM)",
                allow_module_level=True)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
BAR = 44   # the page's top bar: the canvas starts below it
PAGES = [("mlp", "backward.pb"), ("conv", "backward.pb"), ("cond", "backward.pb"), ("while_loop", "backward.pb"),
         ("transformer", "backward.pb"), ("train_adam", "train.pb"), ("shared_param", "backward.pb"),
         ("vision", "forward.pb")]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    path = Path(os.environ.get("GRADC_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def open_page(browser, program, tmp_path, name, stats=None):
    page_file = tmp_path / f"{name}.html"
    page_file.write_text(program_html(program, name, stats), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(page_file.as_uri())
    page.wait_for_function("window.gradcViewer && window.gradcViewer.ready", timeout=30000)
    return page, errors


def click_op(page, block, index):
    page.evaluate(f"gradcViewer.selectOp({block}, {index}, true)")   # bring it into view, then click it for real
    page.evaluate("document.getElementById('panel').classList.remove('open')")
    pos = page.evaluate(f"gradcViewer.screenPos({block}, {index})")
    page.mouse.click(pos["x"], pos["y"] + BAR)
    return page.inner_text("#panel")


@pytest.mark.parametrize("case,name", PAGES, ids=[c for c, _ in PAGES])
def test_fixture_page_click_an_op(browser, shots, tmp_path, case, name):
    program = gradc.load(DATA / case / name)
    page, errors = open_page(browser, program, tmp_path, case)
    pairs = pair_grad_ops(program)
    block = program.global_block
    kinds = op_kinds(block)
    paired = {ref.index for ref in pairs if ref.block == 0}
    target = max((i for i, k in enumerate(kinds) if k == BACKWARD and i in paired), default=len(block.ops) // 2)
    panel = click_op(page, 0, target)
    assert page.evaluate("gradcViewer.selection") == {"type": "op", "b": 0, "i": target}
    assert block.ops[target].type in panel and f"block 0, op {target}" in panel
    assert "op_callstack" not in panel and "Attributes".upper() in panel.upper()
    ref = next((fwd for ref, fwd in pairs.items() if ref.block == 0 and ref.index == target), None)
    if ref is not None:
        assert "DIFFERENTIATES" in panel.upper()
        assert f"{program.blocks[ref.block].ops[ref.index].type} (block {ref.block}, op {ref.index})" in panel
    page.screenshot(path=str(shots / f"{case}.png"))
    assert not errors, errors
    page.close()


def test_var_panel_shows_the_run_values(browser, shots, tmp_path):
    case = DATA / "mlp"
    program = gradc.load(case / "backward.pb")
    with np.load(case / "feed.npz") as f, np.load(case / "params.npz") as p:
        feed, params = dict(f), dict(p)
    stats = value_stats(program, feed, params)
    page, errors = open_page(browser, program, tmp_path, "mlp_values", stats)
    page.evaluate("gradcViewer.selectVar('fc_0.w_0', true)")
    panel = page.inner_text("#panel")
    w = params["fc_0.w_0"]
    assert "fc_0.w_0@GRAD" in panel and "mul (block 0, op 0)" in panel
    for label, value in (("min", w.min()), ("max", w.max()), ("mean", w.mean())):
        cell = page.locator("#panel td", has_text=label).locator("xpath=following-sibling::td").first
        shown = float(cell.inner_text())
        assert shown == pytest.approx(float(value), rel=1e-5, abs=1e-7), label
    page.screenshot(path=str(shots / "mlp_var.png"))
    assert not errors, errors
    page.close()


def test_sub_blocks_collapse_and_expand(browser, shots, tmp_path):
    program = gradc.load(DATA / "while_loop" / "backward.pb")
    page, errors = open_page(browser, program, tmp_path, "while_collapse")
    page.evaluate("gradcViewer.fit()")
    visible = page.evaluate("gradcViewer.scene.nodes.length")
    pos = page.evaluate("gradcViewer.groupPos(1)")
    page.mouse.click(pos["x"], pos["y"] + BAR)
    assert page.evaluate("[...gradcViewer.collapsed]") == [1]
    assert page.evaluate("gradcViewer.screenPos(1, 0).hidden")
    assert page.evaluate("gradcViewer.scene.nodes.length") < visible
    page.screenshot(path=str(shots / "while_collapsed.png"))
    pos = page.evaluate("gradcViewer.groupPos(1)")
    page.mouse.click(pos["x"], pos["y"] + BAR)
    assert page.evaluate("[...gradcViewer.collapsed]") == []
    assert page.evaluate("gradcViewer.scene.nodes.length") == visible
    assert not errors, errors
    page.close()


def test_search_finds_ops_and_vars(browser, tmp_path):
    program = gradc.load(DATA / "conv" / "backward.pb")
    page, errors = open_page(browser, program, tmp_path, "conv_search")
    page.fill("#search", "conv2d_grad")
    page.wait_for_selector("#results [data-op]")
    first = page.inner_text("#results [data-op]")
    assert first.startswith("op conv2d_grad")
    page.press("#search", "Enter")
    selection = page.evaluate("gradcViewer.selection")
    assert program.blocks[selection["b"]].ops[selection["i"]].type == "conv2d_grad"
    page.fill("#search", "batch_norm_0.w_0")
    page.wait_for_selector("#results [data-var]")
    page.click("#results [data-var]")
    assert page.evaluate("gradcViewer.selection") == {"type": "var", "name": "batch_norm_0.w_0"}
    assert not errors, errors
    page.close()


def test_the_9000_op_deep_mlp_pans_and_zooms(browser, shots, tmp_path):
    net = ProgramBuilder()
    hidden = net.data("x", [-1, 8])
    for _ in range(3000):
        hidden = net.fc(hidden, 8, act="relu")
    assert net.program.num_ops() == 9000
    page, errors = open_page(browser, net.program, tmp_path, "deep_mlp")
    page.mouse.move(500, 500)
    before = page.evaluate("({...gradcViewer.view})")
    for _ in range(5):
        page.mouse.wheel(0, 400)
    page.keyboard.down("Control")
    for _ in range(10):
        page.mouse.wheel(0, 200)
    page.keyboard.up("Control")
    page.wait_for_timeout(100)
    after = page.evaluate("({...gradcViewer.view})")
    assert after["scale"] < before["scale"] / 2 and after["ty"] != before["ty"]
    assert page.evaluate("gradcViewer.frames.length") >= 3
    page.screenshot(path=str(shots / "deep_mlp_far.png"))
    panel = click_op(page, 0, 4500)
    assert "block 0, op 4500" in panel
    page.screenshot(path=str(shots / "deep_mlp_op_4500.png"))
    assert not errors, errors
    page.close()


def test_blocks_that_run_each_other_but_not_from_block_0(browser, tmp_path):
    """A malformed program (verify reports the unreachable blocks) still draws: both blocks at the bottom."""
    program = gradc.load(DATA / "cond" / "forward.pb")
    spare = program.append_block(0)
    for op in program.global_block.ops:
        if op.type == "conditional_block":
            op.set_attr("sub_block", spare.idx, gradc.ir.AttrType.BLOCK)
    for block, other in ((1, 2), (2, 1)):
        program.blocks[block].append_op("conditional_block", {"Cond": [], "Input": []}, {"Out": [], "Scope": []},
                                        {"sub_block": other}, {"sub_block": gradc.ir.AttrType.BLOCK})
    assert sum("never runs" in p for p in gradc.verify(program)) == 2
    assert program_dot(program).count("subgraph cluster_") == 3
    page, errors = open_page(browser, program, tmp_path, "cycle")
    groups = page.evaluate("gradcViewer.scene.groups.map(g => g.b).sort()")
    assert groups == [1, 2, 3] and not errors, (groups, errors)
    page.evaluate("gradcViewer.selectOp(1, 0, true)")
    assert "block 1, op 0" in page.inner_text("#panel")
    page.close()
