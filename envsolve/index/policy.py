"""How envsolve asks an index, written once: the client's defaults and the command line's
(``--timeout``, ``--retries``, ``--backoff``) both read these. Imports nothing, so the command line
can show them without loading the HTTP stack."""

from __future__ import annotations

__all__ = ["BACKOFF", "RETRIES", "RETRY_STATUS", "TIMEOUT"]

TIMEOUT = 30.0  # seconds to wait for each answer
RETRIES = 3  # retries of a request that failed or answered one of RETRY_STATUS
BACKOFF = 1.0  # seconds before the first retry; doubled for each further one
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})  # rate limited, or the server failed: worth asking again
