"""`gradc view`: one self-contained HTML page (no network: the script, the style and the program's data
are all inline) that draws the program on a canvas with gradc's own layout (gradc.viz.layout)."""

from __future__ import annotations

import html
import json
from importlib import resources

from ..gcpause import gc_paused
from ..ir import Program
from .model import program_model

SCRIPTS = ("viewer_scene.js", "viewer_draw.js", "viewer_ui.js", "viewer_main.js")

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gradc view: {title}</title><style>{css}</style></head><body>
<div id="bar"><span id="title"></span><span id="counts"></span><span id="legend"></span>
<button id="fit" title="Fit the whole program (f)">Fit</button>
<button id="zoom-out" title="Zoom out (-)">&minus;</button><button id="zoom-in" title="Zoom in (+)">+</button>
<button id="collapse" title="Collapse or expand every sub-block">Blocks</button>
<div id="search-wrap"><input id="search" placeholder="Search ops and vars (/)" autocomplete="off">
<div id="results"></div></div>
</div><canvas id="canvas"></canvas><div id="panel"></div>
<div id="help">drag or scroll to pan &middot; ctrl+scroll or +/&minus; to zoom &middot; f fits &middot;
/ searches &middot; click an op, a var or a block's header</div>
<script id="gradc-data" type="application/json">{data}</script>
<script>const DATA = JSON.parse(document.getElementById("gradc-data").textContent);
{js}</script></body></html>
"""


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@gc_paused()   # the page's model is a tree of new objects: the collector's passes cost a third of a large page
def program_html(program: Program, title: str, stats: dict[str, list] | None = None) -> str:
    data = json.dumps(program_model(program, title, stats), separators=(",", ":"), allow_nan=False)
    return PAGE.format(title=html.escape(title), css=_asset("viewer.css"), data=data.replace("</", "<\\/"),
                       js="\n".join(_asset(name) for name in SCRIPTS))
