"""The one way scenarios draw their report plots: an off-screen (Agg) matplotlib figure whose every
panel gets a title and axis labels with units, saved through the run's report; :func:`problems` lists
what a figure leaves its reader to guess (the scenario tests check every saved figure with it)."""


def figure(rows=1, cols=1, title=None, size_in=None, **subplots_kw):
    """(fig, axes) of a new off-screen figure with constrained layout; ``title`` is the figure's suptitle;
    ``size_in`` (w, h) in inches, default 6.4 x 4.2 per panel. ``axes`` is as ``plt.subplots`` returns it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    subplots_kw.setdefault("layout", "constrained")
    if size_in is None:
        size_in = (6.4 * cols, 4.2 * rows + (0.4 if title else 0.0))
    fig, axes = plt.subplots(rows, cols, figsize=size_in, **subplots_kw)
    if title:
        fig.suptitle(title)
    return fig, axes


def label(ax, title, xlabel, ylabel, legend=True):
    """Title and axis labels (with units, e.g. "time (s)") of one panel, and its legend when it has
    labelled artists."""
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)


def _style(artist):
    """What tells one mark from another on a panel: colour, line style and marker (a line), or its kind
    and colours (a scatter, a band, a bar)."""
    from matplotlib.colors import to_hex, to_rgba_array
    if hasattr(artist, "get_linestyle") and hasattr(artist, "get_marker"):
        if str(artist.get_linestyle()) in ("None", "none", "", " "):
            return ("marker", str(artist.get_marker()))        # a marker's shape says what it is, its colour whose
        return ("line", to_hex(artist.get_color(), keep_alpha=False), str(artist.get_linestyle()),
                str(artist.get_marker()))
    colors = []
    for getter in ("get_facecolor", "get_edgecolor"):
        if hasattr(artist, getter):
            rgba = to_rgba_array(getattr(artist, getter)())
            colors.append(tuple(round(float(c), 3) for c in rgba[0]) if len(rgba) else ())
    return (type(artist).__name__, tuple(colors))


def _twins(ax):
    """The other axes drawn on the same panel as ``ax`` (``ax.twinx()``, ``ax.twiny()`` and ``ax`` itself)."""
    group = getattr(ax, "_twinned_axes", None)
    if group is None:
        return []
    return [other for other in group.get_siblings(ax) if other is not ax]


def problems(fig):
    """What a reader of ``fig`` would have to guess: a panel without a title (unless a twin drawn on the same
    panel, ``ax.twinx()``, has one: a second title would be drawn over the first), without a y label, without an
    x label (unless a panel it shares its x axis with has one), or a mark (line, scatter, band, error bar)
    that no legend explains, or a colour bar without a label. A mark drawn like a legend entry (colour, line
    style and marker; a marker alone by its shape) is explained by it; a panel with a single mark is explained
    by its axis labels. Returns one line per problem (:func:`figure` and :func:`label` avoid them)."""
    out = []
    legend_texts = set()
    legend_styles = set()
    for legend in list(fig.legends) + [ax.get_legend() for ax in fig.get_axes()]:
        if legend is not None:
            legend_texts.update(t.get_text() for t in legend.get_texts())
            legend_styles.update(_style(h) for h in legend.legend_handles if h is not None)
    for i, ax in enumerate(fig.get_axes()):
        if not ax.get_visible() or not ax.has_data():
            continue
        name = "panel %d (%s)" % (i + 1, ax.get_title() or "untitled")
        if getattr(ax, "_colorbar", None) is not None:       # a colour bar: its label says what and in which unit
            if not (ax.get_ylabel() or ax.get_xlabel()):
                out.append("a colour bar without a label")
            continue
        if not ax.get_title() and not any(twin.get_title() for twin in _twins(ax)):
            out.append("%s has no title" % name)
        if not ax.get_ylabel():
            out.append("%s has no y label" % name)
        if not ax.get_xlabel() and not any(other.get_xlabel() for other in ax.get_shared_x_axes().get_siblings(ax)
                                           if other is not ax):
            out.append("%s has no x label" % name)
        in_container = {}
        for container in ax.containers:
            for child in container.get_children():
                in_container[id(child)] = container
        marks = [a for a in list(ax.lines) + list(ax.collections) + list(ax.patches) if a.get_visible()]
        if len(marks) - sum(1 for m in marks if id(m) in in_container) + len(ax.containers) <= 1:
            continue
        explained = set(legend_styles)
        for a in marks:
            owner = in_container.get(id(a))
            text = (owner.get_label() if owner is not None else a.get_label()) or ""
            if not text.startswith("_") and text in legend_texts:
                explained.add(_style(a))
        for a in marks:
            owner = in_container.get(id(a))
            text = (owner.get_label() if owner is not None else a.get_label()) or ""
            if (text.startswith("_") or text not in legend_texts) and _style(a) not in explained:
                out.append("%s: a %s with no legend entry" % (name, type(a).__name__))
                break
    return out
