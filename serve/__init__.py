"""``toolwire serve``: the healing proxy, an ASGI app (needs the ``[serve]`` extra).

:func:`create_app` builds the app from :class:`ServeSettings`; any ASGI server runs it
(``toolwire serve`` uses uvicorn). ``docs/serve.md`` is the guide.
"""

from .app import ProxyApp as ProxyApp
from .app import create_app as create_app
from .settings import ServeSettings as ServeSettings
from .settings import load_settings as load_settings

__all__ = ["ProxyApp", "ServeSettings", "create_app", "load_settings"]
