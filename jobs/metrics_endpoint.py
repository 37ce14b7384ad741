"""The ``/metrics`` endpoint of a job: prometheus-client's HTTP server on the default registry.

One call per job process, at start-up, with the port from the settings'
``metrics`` section (0: no endpoint). A port already taken — a second job of
the same kind on one machine, a test — costs that process its endpoint, not
its work: metrics are worth a warning, never a crashed job. Calling again for
a port this process already serves does nothing (a Flink worker opens one
function instance per subtask in the same process).
"""

from __future__ import annotations

import logging
import threading

from prometheus_client import start_http_server

log = logging.getLogger(__name__)

_serving: set[int] = set()
_lock = threading.Lock()


def serve_metrics(host: str, port: int, job: str) -> bool:
    """Serve ``/metrics`` on ``host:port`` from a daemon thread; False when off or refused."""
    if port == 0:
        return False
    with _lock:
        if port in _serving:
            return True
        try:
            start_http_server(port, addr=host)
        except OSError as exc:
            log.warning("%s: no /metrics endpoint on %s:%d: %s", job, host, port, exc)
            return False
        _serving.add(port)
    log.info("%s: metrics on http://%s:%d/metrics", job, host, port)
    return True
