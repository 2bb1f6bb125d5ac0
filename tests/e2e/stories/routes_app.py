# The founding story tagged by route (samples/python/liveheap_wsgi.py): figure_app's
# GET /plot draws a matplotlib figure and never closes it; GET /plot/closed draws the same,
# closes it and collects it.
# Served by `gunicorn -w 2` in gunicorn_story_test.cpp.
import gc
import os
import sys

import matplotlib.pyplot as plt

sys.path.insert(0, os.environ["LIVEHEAP_SAMPLES_PYTHON"])
from figure_app import app, draw
from liveheap_wsgi import LiveheapRoutes

app.wsgi_app = LiveheapRoutes(app.wsgi_app, app.url_map)


@app.route("/plot/closed")
def plot_closed():
    fig, _ = draw()
    width, height = fig.canvas.get_width_height()
    plt.close(fig)
    gc.collect()  # a figure's objects hold each other: closed, they go at the next collection
    return {"pid": os.getpid(), "width": width, "height": height}
