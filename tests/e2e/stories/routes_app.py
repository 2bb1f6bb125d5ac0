# The founding story tagged by route (samples/python/liveheap_wsgi.py): GET /plot draws a
# matplotlib figure and never closes it; GET /plot/closed draws the same, closes it and
# collects it.
# Served by `gunicorn -w 2` in gunicorn_story_test.cpp.
import gc
import io
import os
import sys
import time

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from flask import Flask

sys.path.insert(0, os.environ["LIVEHEAP_SAMPLES_PYTHON"])
from liveheap_wsgi import LiveheapRoutes

app = Flask(__name__)
app.wsgi_app = LiveheapRoutes(app.wsgi_app, app.url_map)


def draw():
    fig = plt.figure(figsize=(4, 3), dpi=100)
    fig.add_subplot().plot([1, 2, 3], [3, 1, 2])
    out = io.BytesIO()
    fig.savefig(out, format="png")
    time.sleep(0.1)  # holds this worker, so that concurrent requests reach the other one
    return fig


@app.route("/plot")
def plot():
    fig = draw()
    width, height = fig.canvas.get_width_height()
    return {"pid": os.getpid(), "width": width, "height": height}


@app.route("/plot/closed")
def plot_closed():
    fig = draw()
    width, height = fig.canvas.get_width_height()
    plt.close(fig)
    gc.collect()  # a figure's objects hold each other: closed, they go at the next collection
    return {"pid": os.getpid(), "width": width, "height": height}
