"""``toolwire demo``, one module per job.

- ``command``: the sub-command, its options and exit codes;
- ``model_file``: where the ``[local]`` extra put the server and the model file;
- ``server``: starting and always stopping llama-cpp-python's server;
- ``sandbox``: the tools, confined to a temporary folder;
- ``tasks``: the fixed suite;
- ``agent``: the agent loop, one ``toolwire.Pipeline`` per run;
- ``transport``: a live server, or a recording of one;
- ``plain``: what a plain ``json.loads`` loop would do with the same calls;
- ``report``, ``render``, ``plot``: the figures, the tables, the picture.
"""

from .command import add_demo_parser as add_demo_parser

__all__ = ["add_demo_parser"]
