"""How smooth `gradc view` is on the deep MLP: 3,000 fc+relu layers (9,000 forward ops), and its compiled
training program (18,003 ops). For each: the time to write the page and its size, the time until the
browser has drawn it, then frame times while the page pans and zooms itself, one step per animation frame
(the interval between frames, so the raster time counts), at several zoom levels.

Needs Debian's chromium and playwright (the dev extra):

    python benchmarks/viewer.py --out benchmarks/results/viewer.txt
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import gradc
from gradc.layers import ProgramBuilder
from gradc.viz.html import program_html

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
# One animation of `steps` frames: each frame pans (or zooms about the middle) and draws; returns the
# frame intervals in ms.
ANIMATE = """async ([scale, steps, zoom]) => {
  const v = gradcViewer.view;
  v.scale = scale; v.tx = 100; v.ty = -1000 * scale;
  const times = [];
  let last = performance.now();
  for (let k = 0; k < steps; k++) {
    await new Promise(r => requestAnimationFrame(r));
    const now = performance.now(); times.push(now - last); last = now;
    if (zoom) gradcViewer.zoomAt(k < steps / 2 ? 0.97 : 1 / 0.97, 600, 400); else v.ty -= 40;
  }
  return times;
}"""


def deep_mlp(layers: int) -> ProgramBuilder:
    net = ProgramBuilder()
    hidden = net.data("x", [-1, 8])
    for _ in range(layers):
        hidden = net.fc(hidden, 8, act="relu")
    return net


def summary(times: list[float]) -> str:
    times = sorted(times[2:])   # the first frames wait for the page to settle
    p50, p95 = times[len(times) // 2], times[int(len(times) * 0.95)]
    return f"median {p50:5.1f} ms, p95 {p95:5.1f} ms, {1000 / p50:4.0f} fps"


def measure(page_file: Path, browser) -> list[str]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    began = time.perf_counter()
    page.goto(page_file.as_uri())
    page.wait_for_function("window.gradcViewer && window.gradcViewer.ready", timeout=120000)
    page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    lines = [f"  shown after {time.perf_counter() - began:.2f} s"]
    for scale in (1.0, 0.4, 0.1, 0.02):
        lines.append(f"  pan at zoom {scale:<4}: {summary(page.evaluate(ANIMATE, [scale, 60, False]))}")
    lines.append(f"  zoom out and in    : {summary(page.evaluate(ANIMATE, [1.0, 120, True]))}")
    page.close()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=3000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    net = deep_mlp(args.layers)
    forward = net.program.clone()
    gradc.append_backward(net.program, net.mean(net.block.ops[-1].output("Out")[0]))
    lines = [f"gradc view on a {args.layers}-layer fc+relu MLP (headless chromium, software raster, 1400x900)"]
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
        for name, program in (("forward", forward), ("training", net.program)):
            began = time.perf_counter()
            page = program_html(program, name)
            seconds = time.perf_counter() - began
            path = Path(tmp, f"{name}.html")
            path.write_text(page, encoding="utf-8")
            lines.append(f"{name}: {program.num_ops()} ops, page written in {seconds:.2f} s, "
                         f"{len(page) / 2**20:.1f} MiB")
            lines += measure(path, browser)
        browser.close()
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
