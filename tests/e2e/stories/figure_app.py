# The founding story's Flask app: every request draws a matplotlib figure and never closes
# it, so pyplot keeps every figure, and with it its Agg renderer's pixel buffer (the
# canvas's cached renderer). Served by `gunicorn -w 2` in gunicorn_story_test.cpp.
# GET /plot answers which worker drew it and the figure's size in pixels.
import io
import os
import time

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from flask import Flask

app = Flask(__name__)

# The seed's figure: 1560 x 1040 pixels, a 6,489,600-byte Agg buffer.
FIGSIZE, DPI = (15, 10), 104


def draw():
    """A figure drawn and saved as PNG, never closed; and the PNG's size."""
    fig = plt.figure(figsize=FIGSIZE, dpi=DPI)
    fig.add_subplot().plot([1, 2, 3], [3, 1, 2])
    out = io.BytesIO()
    fig.savefig(out, format="png")  # site: savefig
    time.sleep(0.1)  # holds this worker, so that concurrent requests reach the other one
    return fig, len(out.getvalue())


@app.route("/plot")
def plot():
    fig, png_bytes = draw()  # site: draw
    width, height = fig.canvas.get_width_height()
    return {"pid": os.getpid(), "width": width, "height": height, "png_bytes": png_bytes}
