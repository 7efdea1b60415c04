"""Training curves as a PNG (`tf.keras.utils.plot_history`, `History.plot`).

matplotlib is the `plot` extra and is imported only here, on use. The figure is drawn with
matplotlib's object API and the Agg canvas, so no global pyplot state or GUI backend is touched.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Any

from layerflow._src.utils.files import atomic_write


def _series(history: Any) -> tuple[dict[str, list[float]], list[int]]:
    logs = getattr(history, "history", history)
    if not isinstance(logs, Mapping):
        raise TypeError(
            "plot_history takes a History (what model.fit returns) or a dict of per-epoch "
            f"values such as {{'loss': [...]}}, got {type(history).__name__}."
        )
    series = {}
    for key, values in logs.items():
        try:
            series[str(key)] = [float(v) for v in values]
        except (TypeError, ValueError):
            raise TypeError(
                f"plot_history: history[{key!r}] must be a list of numbers, got {values!r}."
            ) from None
    if not series or not any(series.values()):
        raise ValueError("plot_history: the history is empty; train for at least one epoch.")
    epochs = list(getattr(history, "epoch", None) or [])
    n = max(len(v) for v in series.values())
    if len(epochs) != n:
        epochs = list(range(n))
    return series, [e + 1 for e in epochs]


def _panels(series: dict[str, list[float]]) -> list[tuple[str, list[str]]]:
    """One panel per quantity: `loss` with `val_loss`, `accuracy` with `val_accuracy`, ..."""
    panels: dict[str, list[str]] = {}
    for key in series:
        base = key[4:] if key.startswith("val_") and key[4:] in series else key
        panels.setdefault(base, []).append(key)
    order = sorted(panels, key=lambda k: (k != "loss", k == "lr" or k == "learning_rate"))
    return [(k, panels[k]) for k in order]


def plot_history(history: Any, path: Any = "history.png", title: str | None = None) -> str:
    """Write the per-epoch loss and metrics of `history` to a PNG at `path`; return the path.

    >>> import layerflow as tf
    >>> logs = {"loss": [0.9, 0.5], "accuracy": [0.6, 0.8]}
    >>> tf.keras.utils.plot_history(logs, "curves.png")  # doctest: +SKIP
    'curves.png'
    """
    series, epochs = _series(history)
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise ImportError(
            "plot_history needs matplotlib. Install it with: pip install 'layerflow[plot]'"
        ) from None
    panels = _panels(series)
    fig = Figure(figsize=(4.2 * len(panels), 3.4), layout="constrained")
    FigureCanvasAgg(fig)
    for ax, (name, keys) in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels):
        for key in keys:
            values = series[key]
            ax.plot(epochs[: len(values)], values, marker="o", markersize=3,
                    linestyle="--" if key.startswith("val_") else "-", label=key)  # fmt: skip
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title)
    target = pathlib.Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(target) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    return str(path)
