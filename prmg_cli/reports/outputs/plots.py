"""The pictures of the HTML report, drawn by matplotlib and returned as ``data:image/png`` URIs.

Only the object-oriented API is used (``matplotlib.figure.Figure`` with the Agg canvas): no pyplot, no
global backend switch, no display, nothing left behind between reports. Every function takes plain
values (no ``CaseResult``) and returns the URI of one PNG, to be inlined in an ``<img>``.

- ``Heatmaps.draw``: a failed case's ``error_map`` (``diagnosis.error_map``) over (row, d) of the whole
  last axis, on one log colour scale for every map (``heatmap_legend``): quiet blues up to the limit,
  yellow to dark red from it on (a cell of exactly 1 counts as over: the judge scores a wrong element at
  least 1 + 1e-9, which the map's 3 digits round to 1), the slice ``[start, end)`` between two black
  lines, cells outside it hatched (not judged) and magenta where they changed, the worst element crossed.
- ``margin_histogram``: every case's margin (> 1 fails: ``html.closeness``) on a log axis, split at 1.
- ``time_against_bytes``: kernel time against bytes moved, log-log, with lines of equal bandwidth.

Speed matters (a report may hold a hundred heatmaps): figures get fixed margins instead of a layout
engine, and heatmaps reuse one figure per height whose static part (axes, ticks, labels) is drawn once
per set of ticks and blitted under each map's own artists (``_Frame``).
"""

from __future__ import annotations

import base64
import io
import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap, TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator

from ...results import STATUSES

CHANGED = 1e9                 # diagnosis.error_map's mark of a change outside the slice
FLOOR, TOP = -3, 6            # log10 of the heatmaps' colour range: 1e-3 to 1e6 of the limit
DPI = 96
OK_COLOUR, BAD_COLOUR, OTHER_COLOUR = "#3b8f5a", "#c8313a", "#8fa0b3"
CHANGED_COLOUR = "#d01c8b"
_FONT = {"font.size": 8.5}


def _colour_map() -> ListedColormap:
    """128 quiet blues for scores up to the limit, then 128 steps from yellow to dark red above it: the
    jump at 1 is the border between right and wrong."""
    def ramp(colours, count):
        stops = np.array([[int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)] for c in colours])
        at = np.linspace(0, len(colours) - 1, count)
        return np.column_stack([np.interp(at, np.arange(len(colours)), stops[:, k]) for k in range(3)])
    within = ramp(["#f3f6f9", "#c9dcec", "#7fafd6", "#3f7fba"], 128)
    over = ramp(["#ffd84d", "#f59a32", "#e0402b", "#a50f15", "#4d0009"], 128)
    return ListedColormap(np.vstack([within, over]), name="prmg_error").with_extremes(bad=(0, 0, 0, 0))


_ERROR_COLOURS = _colour_map()
_CHANGED_COLOURS = ListedColormap([CHANGED_COLOUR])


def _decade(value: float, _position=None) -> str:
    """A log10 tick as ``1e-3``, ``1``, ``1e6``."""
    return "1" if value == 0 else f"1e{int(round(value))}"


def _row_label(flat: int, rows_shape) -> str:
    """Flat row ``flat`` as ``(b,s,n)`` when the tensor's first three extents are known, else the number."""
    if rows_shape and len(rows_shape) == 3 and 0 <= flat < math.prod(rows_shape):     # Python ints: any size
        b, rest = divmod(flat, rows_shape[1] * rows_shape[2])
        return f"({b},{rest // rows_shape[2]},{rest % rows_shape[2]})"
    return str(flat)


def _encode(figure: Figure) -> str:
    """The drawn ``figure`` (Agg canvas) as a PNG data URI, compressed lightly: speed over bytes."""
    from PIL import Image            # matplotlib's own dependency for writing PNG

    buffer = io.BytesIO()
    Image.fromarray(np.asarray(figure.canvas.buffer_rgba())).save(buffer, format="png", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


HEATMAP_NORM = TwoSlopeNorm(vmin=FLOOR, vcenter=0, vmax=TOP)


class _Frame:
    """One reusable heatmap figure of a given plot height, made once. Its static part (axes, hatched
    background, tick labels and marks) is drawn in full once per distinct set of ticks and kept as a
    pixel buffer; each map restores that buffer and draws only its own artists on it (matplotlib's
    blitting: ``copy_from_bbox``, ``restore_region``, ``draw_artist``). Text is what costs most, and
    maps of one suite share their ticks. The axes' own tick machinery stays off: its layout alone costs
    more than a whole map."""

    WIDTH, LEFT, RIGHT, BOTTOM, TOP_MARGIN = 6.1, 0.95, 0.12, 0.34, 0.2     # inches
    X_LABELS, Y_LABELS, TICK = 8, 5, 3.0                                    # TICK in points
    KEPT = 32                                                               # static parts kept per frame

    def __init__(self, plot_height: float):
        from matplotlib.lines import Line2D
        from matplotlib.transforms import offset_copy

        height = plot_height + self.BOTTOM + self.TOP_MARGIN
        plot_width = self.WIDTH - self.LEFT - self.RIGHT
        self.figure = figure = Figure(figsize=(self.WIDTH, height), dpi=DPI)
        self.canvas = FigureCanvasAgg(figure)
        self.axes = axes = figure.add_axes((self.LEFT / self.WIDTH, self.BOTTOM / height, plot_width / self.WIDTH,
                                            plot_height / height))
        axes.xaxis.set_visible(False)
        axes.yaxis.set_visible(False)
        for spine in axes.spines.values():
            spine.set_color("#59636e")
            spine.set_linewidth(0.8)
        along_x, along_y = axes.get_xaxis_transform(), axes.get_yaxis_transform()
        below = offset_copy(along_x, fig=figure, y=-self.TICK - 1.5, units="points")
        left = offset_copy(along_y, fig=figure, x=-self.TICK - 1.5, units="points")
        above = offset_copy(along_x, fig=figure, y=1.0, units="points")
        style = {"fontsize": 7.5, "color": "#1d2329"}
        self.x_labels = [axes.text(0, 0, "", transform=below, ha="center", va="top", **style)
                         for _ in range(self.X_LABELS)]
        self.y_labels = [axes.text(0, 0, "", transform=left, ha="right", va="center", **style)
                         for _ in range(self.Y_LABELS)]
        self.x_ticks = Line2D([], [], transform=along_x, color="#59636e", linewidth=0.8, clip_on=False)
        self.y_ticks = Line2D([], [], transform=along_y, color="#59636e", linewidth=0.8, clip_on=False)
        for line in (self.x_ticks, self.y_ticks):
            axes.add_line(line)
        self.tick_x = self.TICK / 72 / plot_height          # tick lengths in axes fractions
        self.tick_y = self.TICK / 72 / plot_width
        self.hatch = axes.add_patch(Rectangle((0, 0), 1, 1, facecolor="#eceef1", edgecolor="#c3c8cf",
                                              hatch="////", linewidth=0, zorder=0))
        axes.text(0, 0, "d \u2192", transform=offset_copy(axes.transAxes, fig=figure, x=-self.TICK - 1.5,
                                                         y=-self.TICK - 1.5, units="points"),
                  ha="right", va="top", fontsize=7.5, color="#66707a")
        # the artists of one map, drawn on the static part
        self.edges = [axes.axvline(0, color="#111111", linewidth=1.6, zorder=3, visible=False) for _ in range(2)]
        self.edge_labels = [axes.text(0, 1, "", transform=above, ha="center", va="bottom", fontsize=7.5,
                                      fontweight="bold", visible=False) for _ in range(2)]
        self.worst, = axes.plot([], [], marker="X", markersize=8, color="#ffffff", markeredgecolor="#000000",
                                markeredgewidth=1.0, zorder=4, linestyle="none", visible=False)
        self.meshes: list = []
        self.statics: dict[tuple, object] = {}

    def static(self, depth: float, rows: float, x_ticks: list, y_ticks: list, y_labels: list[str]):
        """The pixels of the static part for these extents and ticks, drawn now when not kept yet."""
        key = (depth, rows, tuple(x_ticks), tuple(y_ticks), tuple(y_labels))
        if key not in self.statics:
            for artist in self.meshes:
                artist.remove()
            self.meshes = []
            for artist in self.edges + self.edge_labels + [self.worst]:
                artist.set_visible(False)
            self.axes.set_xlim(0, depth)
            self.axes.set_ylim(rows, 0)
            self.hatch.set_bounds(0, 0, depth, rows)
            self._show(self.x_labels, [(x, 0) for x in x_ticks], [f"{x:g}" for x in x_ticks])
            self.x_ticks.set_data(np.repeat(x_ticks, 3), np.tile([0, -self.tick_x, np.nan], len(x_ticks)))
            self._show(self.y_labels, [(0, y) for y in y_ticks], y_labels)
            self.y_ticks.set_data(np.tile([0, -self.tick_y, np.nan], len(y_ticks)), np.repeat(y_ticks, 3))
            self.canvas.draw()
            if len(self.statics) >= self.KEPT:
                self.statics.pop(next(iter(self.statics)))
            self.statics[key] = self.canvas.copy_from_bbox(self.figure.bbox)
        return self.statics[key]

    @staticmethod
    def _show(texts: list, positions, labels: list[str]) -> None:
        """The first ``len(labels)`` of ``texts`` at ``positions`` with ``labels``, the others hidden."""
        for index, text in enumerate(texts):
            if index < len(labels):
                text.set_visible(True)
                text.set_text(labels[index])
                text.set_position(positions[index])
            else:
                text.set_visible(False)


class Heatmaps:
    """Draws error maps, one PNG each, fast enough for a hundred per report (``_Frame``: one figure per
    plot height, reused). The colour scale is the same for every map (``heatmap_legend`` draws it once):
    log10 of error/limit from 1e-3 (or less) to 1e6 (or more), the jump from blue to yellow at 1."""

    def __init__(self):
        self._frames: dict[int, _Frame] = {}

    def _frame(self, bins: int) -> _Frame:
        """The reused frame for a map of ``bins`` row bins."""
        plot_height = min(2.6, max(0.36, 0.075 * bins))
        key = int(round(plot_height * 100))
        if key not in self._frames:
            with _rc():
                self._frames[key] = _Frame(key / 100)
        return self._frames[key]

    def draw(self, error_map: dict, rows_shape=None, worst=None) -> str:
        """The PNG of ``error_map`` (module docstring); ``rows_shape`` is (B, S, N) for the row labels and
        ``worst`` the (flat row, d) of the worst element, marked with a cross."""
        row_edges = np.asarray(error_map["row_edges"], dtype=float)
        column_edges = np.asarray(error_map["column_edges"], dtype=float)
        values = np.array([[np.nan if v is None else float(v) for v in row] for row in error_map["values"]],
                          dtype=float).reshape(len(row_edges) - 1, len(column_edges) - 1)
        start, end = (int(v) for v in error_map["slice"])
        depth, rows = float(column_edges[-1]), float(row_edges[-1])
        outside = (column_edges[1:] <= start) | (column_edges[:-1] >= end)
        changed = (values >= CHANGED) & outside[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            scores = np.log10(np.clip(np.where(changed, np.nan, values), 10.0 ** FLOOR, None))
        scores[values == 1] = -1e-9                 # at the limit is within it: blue, not the first colour over it
        bins = values.shape[0]
        frame = self._frame(bins)
        axes = frame.axes
        step = 2 ** max(0, math.ceil(math.log2(depth / 6))) if depth > 0 else 1   # d is counted in powers of 2
        x_ticks = [float(x) for x in range(0, int(depth) + 1, step)]
        room = int(axes.get_position().height * frame.figure.get_figheight() / 0.13)
        labels = max(1, min(bins, frame.Y_LABELS, room))
        chosen = np.arange(0, bins, max(1, math.ceil((bins - 1) / max(1, labels - 1))))     # evenly spaced
        y_ticks = ((row_edges[chosen] + row_edges[chosen + 1]) / 2).tolist()
        y_labels = [_row_label(int(row_edges[i]), rows_shape) for i in chosen]
        with _rc():
            static = frame.static(depth, rows, x_ticks[:frame.X_LABELS], y_ticks, y_labels)
            for mesh in frame.meshes:
                mesh.remove()
            frame.meshes = [axes.pcolormesh(column_edges, row_edges, np.ma.masked_invalid(scores),
                                            cmap=_ERROR_COLOURS, norm=HEATMAP_NORM, zorder=1)]
            if changed.any():
                frame.meshes.append(axes.pcolormesh(column_edges, row_edges,
                                                    np.ma.masked_where(~changed, np.ones_like(values)),
                                                    cmap=_CHANGED_COLOURS, zorder=2))
            slice_edges = sorted({start, end})
            for index, (line, text) in enumerate(zip(frame.edges, frame.edge_labels)):
                shown = index < len(slice_edges)
                line.set_visible(shown)
                text.set_visible(shown)
                if shown:
                    line.set_xdata([slice_edges[index]] * 2)
                    text.set_text(str(slice_edges[index]))
                    text.set_x(slice_edges[index])
            if worst is not None:
                frame.worst.set_data([worst[1] + 0.5], [worst[0] + 0.5])
            frame.worst.set_visible(worst is not None)
            frame.canvas.restore_region(static)
            for artist in frame.meshes + frame.edges + [frame.worst, *axes.spines.values()] + frame.edge_labels:
                axes.draw_artist(artist)
        return _encode(frame.figure)


def heatmap_legend() -> str:
    """The PNG of the heatmaps' shared colour scale (``Heatmaps``), a horizontal bar."""
    with _rc():
        figure = Figure(figsize=(4.2, 0.62), dpi=DPI)
        FigureCanvasAgg(figure)
        axes = figure.add_axes((0.03, 0.62, 0.94, 0.3))
        gradient = np.linspace(FLOOR, TOP, 256)[None, :]
        axes.pcolormesh(np.linspace(FLOOR, TOP, 257), [0, 1], gradient, cmap=_ERROR_COLOURS, norm=HEATMAP_NORM)
        axes.set_yticks([])
        axes.set_xticks(range(FLOOR, TOP + 1))
        axes.xaxis.set_major_formatter(FuncFormatter(_decade))
        axes.tick_params(labelsize=7.5, length=2.5, pad=1)
        axes.axvline(0, color="#111111", linewidth=1.4)
        figure.canvas.draw()
        return _encode(figure)


def _figure(width: float, height: float, left: float, bottom: float, right: float = 0.15, top: float = 0.25):
    """A figure of ``width`` x ``height`` inches with one axes at fixed margins (inches): faster than a
    layout engine, and the same frame in every report."""
    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((left / width, bottom / height, (width - left - right) / width,
                            (height - bottom - top) / height))
    axes.spines[["top", "right"]].set_visible(False)
    return figure, axes


_GROUPS = (("ok", "passed", OK_COLOUR),
           ("bad", ", ".join(status for status, info in STATUSES.items() if not info.ok), BAD_COLOUR),
           ("other", "other", OTHER_COLOUR))


def margin_histogram(margins: list[tuple[float, str]]) -> str:
    """The PNG histogram of ``margins`` ((value, group) with group ``ok``, ``bad`` or ``other``), stacked by
    group, each counted in the legend as plotted (a case with no margin is not: the counts may be below the
    run's); log bins of a quarter decade with 1 a bin edge, the axis from at most 0.1 to at least 10 (the
    limit always in sight), values below 1e-4 in the first bin and above 1e8 (or inf) in the last."""
    low, high = -4.0, 8.0
    values = np.array([value for value, _ in margins], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.clip(np.nan_to_num(np.log10(values), nan=high, posinf=high, neginf=low), low, high - 1e-9)
    shown_low = max(low, min(-1.0, math.floor(logs.min()) if len(logs) else -1.0))
    shown_high = min(high, max(1.0, math.ceil(logs.max() + 1e-9) if len(logs) else 1.0))
    edges = np.arange(shown_low, shown_high + 0.125, 0.25)
    with _rc():
        figure, axes = _figure(7.0, 2.7, 0.55, 0.48, top=0.3)
        stacks = [(logs[np.array([g == key for _, g in margins], dtype=bool)], label, colour)
                  for key, label, colour in _GROUPS]
        stacks = [entry for entry in stacks if len(entry[0])]
        axes.hist([entry[0] for entry in stacks], bins=edges, stacked=True, color=[e[2] for e in stacks],
                  label=[f"{e[1]} ({len(e[0])} plotted)" for e in stacks], edgecolor="#ffffff", linewidth=0.5)
        axes.axvline(0, color="#111111", linewidth=1.4)
        axes.text(0, 1.0, " limit", transform=axes.get_xaxis_transform(), va="top", ha="left", fontsize=8,
                  fontweight="bold")
        axes.xaxis.set_major_locator(MaxNLocator(nbins=12, integer=True))
        axes.xaxis.set_major_formatter(FuncFormatter(_decade))
        axes.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        axes.set_xlim(edges[0], edges[-1])
        axes.set_xlabel("margin: beyond rounding under default, else error / limit (log scale; right of 1 fails)")
        axes.set_ylabel("cases")
        axes.legend(frameon=False, fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3,
                    borderaxespad=0.2, handletextpad=0.4, columnspacing=1.0)
        figure.canvas.draw()
        return _encode(figure)


def _bytes_label(value: float, _position=None) -> str:
    """``100 B``, ``10 kB``, ``1 MB`` for a tick at a power of ten."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:g} {unit}"
    return f"{value:g} B"


def time_against_bytes(points: list[tuple[float, float, str]], note: str = "") -> str:
    """The PNG scatter of (bytes moved, kernel ms, group) on log-log axes, with dotted lines of equal
    bandwidth (GB/s, each labelled where it leaves the plot); ``note`` goes above the plot."""
    data = np.array([(b, ms) for b, ms, _ in points], dtype=float).reshape(-1, 2)
    x_low, x_high = data[:, 0].min() / 2, data[:, 0].max() * 2
    y_low, y_high = data[:, 1].min() / 2, data[:, 1].max() * 2
    with _rc():
        figure, axes = _figure(7.0, 3.0, 0.62, 0.48, top=0.32)
        for key, label, colour in _GROUPS:
            mask = np.array([g == key for _, _, g in points], dtype=bool)
            if mask.any():
                axes.scatter(data[mask, 0], data[mask, 1], s=16, color=colour, alpha=0.8, linewidths=0,
                             label=f"{label} ({int(mask.sum())})", zorder=2)
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlim(x_low, x_high)
        axes.set_ylim(y_low, y_high)
        axes.xaxis.set_major_locator(LogLocator(base=10))
        axes.xaxis.set_major_formatter(FuncFormatter(_bytes_label))
        axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}"))
        for axis in (axes.xaxis, axes.yaxis):
            axis.set_minor_locator(NullLocator())
        span = np.geomspace(x_low, x_high, 2)
        for exponent in range(math.floor(math.log10(x_low / (y_high * 1e6))),
                              math.ceil(math.log10(x_high / (y_low * 1e6))) + 1):
            gbps = 10.0 ** exponent
            axes.plot(span, span / (gbps * 1e6), linestyle=":", color="#9aa3ad", linewidth=0.8, zorder=1)
            exit_x, exit_y = x_high, x_high / (gbps * 1e6)            # where the line leaves the plot
            if exit_y > y_high:
                exit_x, exit_y = y_high * gbps * 1e6, y_high
            if x_low * 5 < exit_x <= x_high and y_low * 3 < exit_y <= y_high:    # clear of the axes' labels
                axes.text(exit_x / 1.08, exit_y / 1.08, f"{gbps:g} GB/s", fontsize=7, color="#6b7480",
                          ha="right", va="top")
        axes.set_xlabel("bytes moved per launch")
        axes.set_ylabel("kernel time (ms)")
        if note:
            axes.set_title(note, loc="left", fontsize=8, color="#6b7480")
        axes.legend(frameon=False, fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3,
                    borderaxespad=0.2, handletextpad=0.2, columnspacing=1.0)
        figure.canvas.draw()
        return _encode(figure)


def _rc():
    """The report's matplotlib settings, for the figures drawn inside the ``with`` only."""
    from matplotlib import rc_context

    return rc_context(_FONT)
