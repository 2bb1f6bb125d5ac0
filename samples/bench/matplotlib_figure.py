"""The matplotlib workload of the overhead benchmark: one operation is one
figure, 12x8 in at 130 dpi (a 1560x1040 Agg canvas, 6.5 MB), with a line plot of 20,000
points and a histogram, saved as PNG into a BytesIO and closed.

    /usr/bin/python3 matplotlib_figure.py [--count 10] [--warmup 2]

Prints cpu_ns_per_figure=, minflt_per_figure=, madvise_per_figure= (see py_workload.py).
"""
import io

import py_workload


def main():
    args = py_workload.parse_args(__doc__)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError as e:
        py_workload.skip(f"python3-matplotlib not installed ({e})")
        return
    rng = np.random.default_rng(11)
    x = np.linspace(0, 20, 20000)
    samples = rng.normal(size=100000)

    def figure():
        fig, axes = plt.subplots(1, 2, figsize=(12, 8), dpi=130)
        axes[0].plot(x, np.sin(x) * np.exp(-x / 10))
        axes[1].hist(samples, bins=50)
        png = io.BytesIO()
        fig.savefig(png, format="png")
        plt.close(fig)

    py_workload.measure(figure, "figure", args)


if __name__ == "__main__":
    main()
