"""``omp-session mcp``: earlier sessions for agents, over the Model Context Protocol (docs/mcp.md).

``tools`` answers each tool from the library as plain data (tested without a server); ``server``
puts them and the session resources behind the official ``mcp`` SDK (an extra: ``omp-session[mcp]``).
"""
