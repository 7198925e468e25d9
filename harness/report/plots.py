"""The one way scenarios draw their report plots: an off-screen (Agg) matplotlib figure whose every
panel gets a title and axis labels with units, saved through the run's report."""


def figure(rows=1, cols=1, title=None, size_in=None, **subplots_kw):
    """(fig, axes) of a new off-screen figure; ``title`` is the figure's suptitle; ``size_in`` (w, h) in
    inches, default 6.4 x 4.8 per panel. ``axes`` is as ``plt.subplots`` returns it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
