"""The one place that reads package indexes.

- :mod:`.client`: :class:`~.client.IndexClient`, HTTP with CacheControl's cache and urllib3's
  retries (the only module here that reaches beyond the process);
- :mod:`.registry`: :class:`~.registry.RegistryClient`, the digest of a container image's tag from
  its registry (HTTP API v2, anonymous bearer tokens), through the client's session;
- :mod:`.policy`: the defaults of every request (timeout, retries, backoff, which answers to retry);
- :mod:`.pages`: project pages (PEP 691 JSON, PEP 503 HTML) and which Pythons a release has;
- :mod:`.metadata`: core metadata, ``Requires-Dist`` for a target platform, bundled CUDA facts;
- :mod:`.wheel`: a wheel's zip structure from byte ranges;
- :mod:`.reader`: the :class:`~.reader.Reader` protocol steering, ``data --verify`` and
  ``refresh`` read an index through.
"""
