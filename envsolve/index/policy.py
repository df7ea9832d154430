"""How envsolve asks an index, written once: the client's defaults and the command line's
(``--timeout``, ``--retries``, ``--backoff``) both read these. Imports nothing, so the command line
can show them without loading the HTTP stack."""

from __future__ import annotations

__all__ = ["BACKOFF", "CREDENTIALS_TIP", "REFUSED_STATUS", "RETRIES", "RETRY_STATUS", "TIMEOUT"]

TIMEOUT = 30.0  # seconds to wait for each answer
RETRIES = 3  # retries of a request that failed or answered one of RETRY_STATUS
BACKOFF = 1.0  # seconds before the first retry; doubled for each further one
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})  # rate limited, or the server failed: worth asking again
# the index refused the credentials (none, or not valid for it): asking again gets the same answer,
# so it is said once, never retried, and never taken for an index that cannot be reached
REFUSED_STATUS = {401: "401 Unauthorized", 403: "403 Forbidden"}
# how to give an index a login, wherever envsolve (its own client, or uv) was refused
CREDENTIALS_TIP = ("give the index a login: a `machine HOST login USER password TOKEN` line in ~/.netrc (or the "
                   "file NETRC names), the URL with its login in project.toml's [indexes] "
                   "(`pypi = \"https://USER:TOKEN@HOST/simple\"`: envsolve keeps it out of the lock), or pip's "
                   "configuration (index-url with the login in pip.conf, or PIP_INDEX_URL); then check that the "
                   "token is valid and may read that index (see README 'Credentials')")
