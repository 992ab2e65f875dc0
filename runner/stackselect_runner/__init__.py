"""StackSelect runner agent: measures serving stacks on the machine that hosts them.

This package is installed on GPU hosts on its own, so it never imports Django or the web app.
"""

__version__ = "0.1.0"
